"""Traced reference memory systems (mem0-style, naive RAG, long-context) over LoCoMo-format data.

See docs/tracing.md. Entry points: ``runner.run_system`` (``memtrace run``) and
``registry.make_system`` for single conversations; ``registry`` names every system, backend and
ranker.
"""
