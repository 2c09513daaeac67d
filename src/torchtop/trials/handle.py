"""A trial's handle: the run it measures now, and how its caller ends it.

The caller of `run_trial` (the dashboard's `WatchedJob`) holds a `TrialHandle`; `measure`
registers each launch on it while the launch is measured, so cancelling signals that very job
(its process group) rather than searching the trial's folder for the pids its runs recorded.
A launch registered after `cancel` is signalled at once, and `run_trial` starts nothing more
once the handle is cancelled. Signals only: the measuring thread, which owns the job, sees it
end and stops it properly (its survivors, its exit record).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from torchtop.model.trials import Trial

KILL_AFTER_S = 3.0
"""A measured run still alive this long after SIGTERM gets SIGKILL."""


class Launched(Protocol):
    """A started job as the handle needs it: the leader of its own process group."""

    @property
    def pid(self) -> int: ...


class TrialCancelled(Exception):
    """Raised through `run_trial` to end a trial whose handle was cancelled; `run_trial`
    raises it again carrying the cancelled trial (`Trial.cancelled`: the runs measured so far,
    recorded in `RUN/trials/NN-cancelled.json`)."""

    def __init__(self, trial: Trial | None = None) -> None:
        super().__init__("the trial was cancelled")
        self.trial = trial


class TrialHandle:
    """The job a trial measures now (None between runs) and whether the trial was cancelled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = threading.Event()
        self._job: Launched | None = None
        self._signalled_at: float | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def measuring(self, job: Launched | None) -> None:
        """`job` is measured now (None: no run is); after `cancel` it is stopped at once."""
        with self._lock:
            self._job, self._signalled_at = job, None
        if job is not None and self.cancelled:
            self.cancel()

    def cancel(self) -> None:
        """Stop the run being measured (SIGTERM, or SIGKILL once it outlived one by
        `KILL_AFTER_S`) and let the trial start no other; called again, it escalates."""
        self._cancelled.set()
        with self._lock:
            job = self._job
            if job is None:
                return
            now = time.monotonic()
            if self._signalled_at is None:
                self._signalled_at = now
            late = now - self._signalled_at > KILL_AFTER_S
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL if late else signal.SIGTERM)

    def check(self) -> None:
        """Raise `TrialCancelled` once the trial was cancelled."""
        if self.cancelled:
            raise TrialCancelled
