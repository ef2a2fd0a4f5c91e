"""`memtrace review`: people confirm or correct attributions; their labels are the third source.

A local web app (``app.py``, Starlette + Jinja2, served by uvicorn from ``serve.py``) shows
review queues of one attribution run and a page per case; a decision is a ``:Review`` node and,
for confirm / correct, a ``LABELED {source: 'human', reviewer}`` edge. ``store.py`` runs every
query; ``queues.py``, ``agreement.py``, ``annotations.py`` and ``picture.py`` are pure.
"""
