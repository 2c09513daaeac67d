"""Load-sensitive tests run alone: the `alone` marker, held by a lock across xdist workers.

CI runs the suite with `pytest -n 2`: two workers, each running real training jobs. A test
that measures the machine's load (other processes' CPU, a job's run-queue wait, speed) would
measure the other worker's test too. Every test takes a shared lock on a file of this test
run's own; a test marked `alone` takes it exclusively, so it starts once the test beside it
ends and no other test starts until it is done. A turnstile (a second lock, held exclusively
by the `alone` test while it waits) keeps the other worker's stream of short tests from
starving it. Only an xdist worker takes the lock (its `workerinput` names the test run): outside
xdist there is nobody to wait for, and a pytest a test starts inherits the worker's environment
but is no worker, so it can never wait on the test that started it.
"""

from __future__ import annotations

import contextlib
import fcntl
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "alone: load-sensitive (contention, speed): runs with no other test of the session "
        "beside it under pytest-xdist (tests/machine_lock.py)",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `alone` tests last, the others in their own order. There the test beside each is
    a short one, so its worker waits little, and the wait falls in the suite's tail, where the
    other worker runs out of tests anyway. Run first, they met the other worker still
    collecting the suite, which no lock covers, and a contention test failed on it twice. (The
    real-job modules first, to even out the tail, ran both workers' real jobs side by side for
    the suite's first half; not kept.) Every worker sorts the same way, as xdist needs."""
    items.sort(key=lambda item: item.get_closest_marker("alone") is not None)


@contextlib.contextmanager
def machine_lock(alone: bool, run_id: str | None) -> Iterator[None]:
    """Held for one test: exclusively where `alone`, else shared with the other tests."""
    if run_id is None:
        yield
        return
    base = Path(tempfile.gettempdir()) / f"torchtop-tests-{run_id}"
    with open(f"{base}.turnstile", "a") as gate, open(f"{base}.lock", "a") as lock:
        if alone:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(lock, fcntl.LOCK_EX)
        else:
            fcntl.flock(gate, fcntl.LOCK_SH)
            fcntl.flock(lock, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _machine_share(request: pytest.FixtureRequest) -> Iterator[None]:
    alone = request.node.get_closest_marker("alone") is not None
    worker: dict[str, object] | None = getattr(request.config, "workerinput", None)
    run_id = worker.get("testrunuid") if worker is not None else None
    with machine_lock(alone, str(run_id) if run_id is not None else None):
        yield
