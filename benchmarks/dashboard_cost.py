"""What the live dashboard costs the machine it shares with the job: CPU, redraws, memory.

Two ways to feed it, each watched by the real app (`torchtop.tui.app.Dashboard` over a real
`LiveMonitor`, ticking once a second with the real pacer) running headless in this process
(`App.run_test()`, 160x48):

* ``replay`` -- a synthetic run folder (two ranks, two GPUs, DataLoader workers, py-spy dumps:
  the communication-bound fixture of tests/tui) written by a separate process at ``--speed``
  times real time (default 10x: ten seconds of samples and steps arrive every second);
* ``demo``   -- the real demo job (``python -m torchtop.demo.train``) under the agent, with
  the launcher's collectors as ``torchtop demo`` starts them.

Measured over the run, after a few seconds of warm-up: CPU of this whole process per wall
second (% of one core; the writer runs in its own process and is not counted), split into the
UI thread (layout, render, compositor) and the tick thread (reading the run folder, assessing,
building frames); screen updates and panel draws per second; and memory (RSS, and with
``--tracemalloc`` the Python heap) sampled ten times, so a climb would show. Buffers are
bounded (RunState keeps 3600 samples per source; the dashboard's history merges points in
pairs), so memory must flatten once they fill: ``--speed 60 --seconds 120`` replays two hours.

Usage::

    python benchmarks/dashboard_cost.py [--mode replay|demo] [--seconds 60] [--speed 10]
                                        [--tracemalloc] [--json FILE]

Targets (DESIGN.md): a few redraws a second, under 5% of one core on average, flat memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the synthetic run writer lives with the tests it serves

from torchtop.diagnosis.rules import load_rules  # noqa: E402
from torchtop.live.watch import LiveMonitor  # noqa: E402
from torchtop.tui.app import Dashboard  # noqa: E402
from torchtop.tui.ticking import IntervalPacer  # noqa: E402
from torchtop.tui.widgets.panel import Panel  # noqa: E402

WARMUP_S = 5.0
MEMORY_SAMPLES = 10
WRITE_EVERY_S = 0.1


def write_replay(run_dir: Path, scenario: str, speed: float, seconds: float) -> None:
    """The writer process: `speed` simulated seconds of the run per wall second."""
    from tests.tui.replay import SyntheticRun, communication_bound, dataloader_bound

    chosen = communication_bound() if scenario == "comm" else dataloader_bound()
    run = SyntheticRun(run_dir, chosen)
    started = time.monotonic()
    due = started
    while time.monotonic() - started < seconds:
        run.advance(speed * WRITE_EVERY_S)
        due += WRITE_EVERY_S
        time.sleep(max(0.0, due - time.monotonic()))
    run.close()


@dataclass
class ThreadClock:
    """CPU seconds spent inside wrapped calls, on whichever thread makes them."""

    cpu_s: float = 0.0
    calls: int = 0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.cpu_s += time.thread_time() - started
                self.calls += 1

        return timed


@dataclass
class Result:
    mode: str
    wall_s: float = 0.0
    ticks: int = 0
    frames_shown: int = 0
    screen_updates: int = 0
    panel_draws: int = 0
    cpu_pct: float = 0.0
    ui_thread_pct: float = 0.0
    tick_thread_pct: float = 0.0
    rss_mb: list[float] = field(default_factory=list)
    heap_mb: list[float] = field(default_factory=list)
    samples_held: dict[str, int] = field(default_factory=dict)


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def process_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def watch(app: Dashboard, seconds: float, result: Result, heap: bool) -> None:
    """Run the app headless for `seconds` after warm-up, sampling what it costs."""
    updates = [0]
    display = app._display  # Textual's one call per screen update: count them

    def counting_display(screen: Any, renderable: Any) -> None:
        if renderable is not None:
            updates[0] += 1
        display(screen, renderable)

    app._display = counting_display  # type: ignore[method-assign]
    tick_clock = ThreadClock()
    app.builder.build = tick_clock.wrap(app.builder.build)  # type: ignore[method-assign]
    assert app.source is not None
    app.source.tick = tick_clock.wrap(app.source.tick)  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)):
        await asyncio.sleep(WARMUP_S)
        start = (time.monotonic(), process_cpu_s(), time.thread_time(), tick_clock.cpu_s)
        counts = (updates[0], Panel.renders, app.frames_shown, app.frames_received)
        for _ in range(MEMORY_SAMPLES):
            result.rss_mb.append(round(rss_mb(), 1))
            if heap:
                result.heap_mb.append(round(tracemalloc.get_traced_memory()[0] / 1e6, 1))
            await asyncio.sleep(seconds / MEMORY_SAMPLES)
        wall = time.monotonic() - start[0]
        result.wall_s = round(wall, 1)
        result.cpu_pct = round(100 * (process_cpu_s() - start[1]) / wall, 2)
        result.ui_thread_pct = round(100 * (time.thread_time() - start[2]) / wall, 2)
        result.tick_thread_pct = round(100 * (tick_clock.cpu_s - start[3]) / wall, 2)
        result.screen_updates = updates[0] - counts[0]
        result.panel_draws = Panel.renders - counts[1]
        result.frames_shown = app.frames_shown - counts[2]
        result.ticks = app.frames_received - counts[3]
        state = app.source.watcher.state if isinstance(app.source, LiveMonitor) else None
        if state is not None:
            held = state.samples
            result.samples_held = {
                "host": len(held.host),
                "gpu": len(held.gpu),
                "stacks": len(held.stacks),
            }
        app.pacer.stop()


def replay(args: argparse.Namespace) -> Result:
    run_dir = Path(tempfile.mkdtemp(prefix="dashboard-cost-")) / "run"
    writer = subprocess.Popen(
        [sys.executable, __file__, "--writer", str(run_dir), "--scenario", args.scenario,
         "--speed", str(args.speed), "--seconds", str(args.seconds + WARMUP_S + 5)],
    )  # fmt: skip
    try:
        while not (run_dir / "run.json").is_file():
            time.sleep(0.05)
        monitor = LiveMonitor(run_dir, load_rules(), kind="run")
        app = Dashboard(monitor, pacer=IntervalPacer(1.0))
        result = Result(f"replay {args.scenario} {args.speed:g}x")
        asyncio.run(watch(app, args.seconds, result, args.tracemalloc))
        return result
    finally:
        writer.terminate()
        writer.wait()


def demo(args: argparse.Namespace) -> Result:
    from torchtop.jobs.job import Output, start
    from torchtop.live.collect import start_collectors

    run_dir = Path(tempfile.mkdtemp(prefix="dashboard-cost-")) / "run"
    # The job's output in a log file, as under the dashboard it must be.
    output = Output.log(run_dir.parent / "job.log")
    job = start([sys.executable, "-m", "torchtop.demo.train"], run_dir, "demo", output=output)
    collectors = start_collectors(job.layout, job.pid, with_agent=True)
    try:
        monitor = LiveMonitor(run_dir, load_rules(), job=job, kind="demo")
        app = Dashboard(monitor, pacer=IntervalPacer(1.0))
        result = Result("demo")
        asyncio.run(watch(app, args.seconds, result, args.tracemalloc))
        return result
    finally:
        collectors.stop()
        if job.poll() is None:
            job.stop()


def print_result(result: Result) -> None:
    wall = max(result.wall_s, 1e-9)
    print(f"mode                 {result.mode}")
    print(f"measured             {result.wall_s:.1f} s after {WARMUP_S:.0f} s of warm-up")
    print(f"ticks / frames shown {result.ticks} / {result.frames_shown}")
    print(f"screen updates       {result.screen_updates / wall:.2f} per s")
    print(f"panel draws          {result.panel_draws / wall:.2f} per s")
    print(f"CPU, whole process   {result.cpu_pct:.2f} % of one core")
    print(f"  UI thread          {result.ui_thread_pct:.2f} %")
    print(f"  tick thread        {result.tick_thread_pct:.2f} %")
    print(f"RSS (MB)             {' '.join(f'{m:.1f}' for m in result.rss_mb)}")
    if result.heap_mb:
        print(f"Python heap (MB)     {' '.join(f'{m:.1f}' for m in result.heap_mb)}")
    if result.samples_held:
        print(f"samples held         {result.samples_held}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("replay", "demo"), default="replay")
    parser.add_argument("--scenario", choices=("comm", "loader"), default="comm")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured wall seconds")
    parser.add_argument("--speed", type=float, default=10.0, help="replay speed (x real time)")
    parser.add_argument("--tracemalloc", action="store_true", help="also trace the Python heap")
    parser.add_argument("--json", metavar="FILE", help="append the result as one JSON line")
    parser.add_argument("--writer", metavar="RUN_DIR", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer:
        write_replay(Path(args.writer), args.scenario, args.speed, args.seconds)
        return
    if args.tracemalloc:
        tracemalloc.start()
    result = replay(args) if args.mode == "replay" else demo(args)
    print_result(result)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(result)) + "\n")


if __name__ == "__main__":
    threading.current_thread().name = "ui"
    main()
