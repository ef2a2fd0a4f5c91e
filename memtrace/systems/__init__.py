"""Traced reference memory systems (mem0-style, naive RAG, long-context) over LoCoMo-format data.

See docs/tracing.md. Entry points: ``runner.run_system`` (``memtrace run``) and
``runner.make_system`` for single conversations.
"""
