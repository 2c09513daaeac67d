"""Keeps the agent's wrappers out of the job's tracebacks.

The agent wraps a few torch functions (`backward`, a DataLoader's `__next__`, ...): torch has
no global hook for "a backward pass started and ended", so timing it needs a wrapper. An
exception raised inside passes through the wrapper, and Python records each frame it passes:
the job's error would show `torchtop/agent/hooks.py ... in backward`, pointing the user at the
wrong culprit. So each wrapper's `except` block calls `drop_own_frame` and re-raises with a
bare `raise`. CPython records a frame where an exception is raised in it or arrives in it from
a call, never at a bare re-raise, so the traceback goes from the job's own call straight into
torch's. The `try` costs nothing on the normal path (zero-cost exceptions since 3.11).
"""

from __future__ import annotations

import sys


def drop_own_frame(exc: BaseException) -> None:
    """Take the calling wrapper's frame off the head of `exc`'s traceback (call from the
    wrapper's `except` block, then `raise` bare)."""
    tb = exc.__traceback__
    if tb is not None and tb.tb_frame is sys._getframe(1):
        exc.__traceback__ = tb.tb_next
