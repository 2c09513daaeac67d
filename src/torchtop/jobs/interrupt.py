"""A SIGTERM to torchtop itself taken as Ctrl-C: `timeout 3600 torchtop run ...`, a `kill`, or a
scheduler's stop then end torchtop by the path Ctrl-C takes, which stops the job it launched
(with the job's own cleanup) and keeps what was measured, where Python's default would end
torchtop at once and leave its job running unwatched in a session of its own."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """A SIGTERM to this process raises KeyboardInterrupt while in the block, where it can (the
    main thread; elsewhere nothing changes); SIGTERM's handler is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, saved)
