"""`memtrace report`: a self-contained diagnostic report of one run (HTML + Markdown twin)."""
