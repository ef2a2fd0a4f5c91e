"""Integrations with systems and tools memtrace did not write (optional extras)."""
