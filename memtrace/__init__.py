"""memtrace: find out why an LLM memory system gave a wrong answer, and fix it."""

__version__ = "0.1.0"
