"""Fixtures for the dashboard: replayed runs watched by the real monitor, a pacer stepped by
hand, and helpers that drive an app one tick at a time and read what its panels show."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text
from textual.pilot import Pilot

from tests.tui.replay import (
    Replay,
    Scenario,
    SyntheticRun,
    communication_bound,
    dataloader_bound,
    known_matmuls,
    leaky_with_checkpoints,
)
from torchtop.assess.context import read_context
from torchtop.model.peak import MEASURED, Peak
from torchtop.model.report import Report
from torchtop.sessions.offline import analyze_paths
from torchtop.tui.app import Dashboard
from torchtop.tui.frame import offline_frame
from torchtop.tui.widgets.panel import Panel

RESNET_NW0 = "kineto-tb-plugin/resnet50_num_workers_0"
MATMUL_PEAK = Peak("AMD EPYC (test)", {"fp32": 0.08}, 0.012, MEASURED)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (no async plugin needed for `run_test`)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
    return True


class ManualPacer:
    """A pacer the test steps: each `release` lets exactly one tick through; no clock at all.

    Where the real pacer sleeps out an interval, this one calls `elapse` (a replay's simulated
    interval) once each tick is let through, just before the tick."""

    def __init__(self, elapse: Callable[[], None] | None = None) -> None:
        self.elapse = elapse
        self._changed = threading.Condition()
        self._permits = 0
        self._stopped = False
        self.waits = 0

    def wait(self) -> bool:
        with self._changed:
            self.waits += 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._permits > 0 or self._stopped)
            if self._stopped:
                return False
            self._permits -= 1
        if self.elapse is not None:
            self.elapse()
        return True

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    def release(self) -> None:
        with self._changed:
            self._permits += 1
            self._changed.notify_all()

    def wait_for_waits(self, count: int, done: threading.Event) -> None:
        """Block until the tick thread asks for tick `count` (so the one before was posted)."""
        with self._changed:
            while self.waits < count and not done.is_set():
                # `done` (the tick thread ended) is not tied to this condition: look again soon.
                self._changed.wait(timeout=0.05)


FRAME_WAIT_S = 30.0
"""How long `advance` waits for a tick's frame to be shown."""


async def advance(pilot: Pilot[Any], ticks: int = 1) -> None:
    """Let `ticks` snapshots through, one at a time, each shown before the next is let go."""
    app = pilot.app
    assert isinstance(app, Dashboard)
    pacer = app.pacer
    assert isinstance(pacer, ManualPacer)
    for _ in range(ticks):
        received = app.frames_received
        target = pacer.waits + 1
        pacer.release()
        await asyncio.to_thread(pacer.wait_for_waits, target, app.ticks_stopped)
        # Until the tick's frame is shown: a count of event-loop turns ran out on a loaded
        # machine before the frame came, and the snapshot then showed the tick before.
        # A tick thread that stopped may have posted nothing: a short grace then.
        start_s = time.monotonic()
        while app.frames_received <= received and app.is_running:
            waited_s = time.monotonic() - start_s
            if waited_s > FRAME_WAIT_S or (app.ticks_stopped.is_set() and waited_s > 2.0):
                break
            await pilot.pause(0.01)


async def wait_until(pilot: Pilot[Any], ready: Callable[[], object], what: str, s: float) -> None:
    """Until `ready()` holds, looking every 0.2 s; fails naming `what` after `s` seconds."""
    deadline = time.monotonic() + s
    while not ready():
        assert time.monotonic() < deadline, f"no {what} within {s:g} s"
        await pilot.pause(0.2)


def panel_text(app: Dashboard, selector: str) -> str:
    """What a panel shows, as plain text (colour stripped: what a NO_COLOR terminal reads)."""
    panel = app.query_one(selector, Panel)
    rendered = panel.render()
    assert isinstance(rendered, Text)
    return rendered.plain


def scenario_replay(tmp_path: Path, scenario: Scenario, ticks: int | None = None) -> Replay:
    return Replay(SyntheticRun(tmp_path / "run", scenario), ticks=ticks)


LiveApp = Callable[..., Dashboard]


@pytest.fixture
def live_app(tmp_path: Path) -> Iterator[LiveApp]:
    """`live_app("loader" | "comm", ticks=None, **options)`: a dashboard over the real
    `LiveMonitor` watching a replayed run, one simulated second a tick."""
    replays: list[Replay] = []

    def make(name: str = "loader", ticks: int | None = None, **options: object) -> Dashboard:
        scenarios = {"loader": dataloader_bound, "comm": communication_bound,
                     "matmul": known_matmuls, "leaky": leaky_with_checkpoints}  # fmt: skip
        scenario = scenarios[name]()
        # The matmul job's CPU peak, as `run` would have read it from the cache: a fixed figure.
        context = replace(read_context(), cpu_peak=MATMUL_PEAK) if name == "matmul" else None
        if name == "leaky":  # the time to its limit from its own samples, not this machine's
            context = replace(read_context(), memory_limits=())
        replay = Replay(SyntheticRun(tmp_path / "run", scenario), ticks=ticks, context=context)
        replays.append(replay)
        pacer = ManualPacer(replay.elapse)
        return Dashboard(replay.monitor, pacer=pacer, **options)  # type: ignore[arg-type]

    yield make
    for replay in replays:
        replay.run.close()


@pytest.fixture(scope="session")
def resnet_report(shared: Path) -> Report:
    return analyze_paths([str(shared / RESNET_NW0)])


@pytest.fixture
def offline_app(resnet_report: Report) -> Dashboard:
    return Dashboard(frame=offline_frame(resnet_report))
