"""Children that a test interrupts with SIGINT, as Ctrl-C would."""

from __future__ import annotations

import signal


def interruptible_child() -> None:
    """``preexec_fn`` of such a child: a shell starts background jobs with SIGINT ignored, and
    Python then installs no KeyboardInterrupt handler, so a suite run with ``&`` would see the
    child shrug off the signal. Restoring the default lets Python install its handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
