"""What `attach --inject` costs a running job at the moment it gets in and out.

A small CPU training job (an MLP step, then 2 ms asleep, in a loop) records on its own clock
every gap between two iterations. The harness injects torchtop's agent into it through gdb
(`attach.inject`, as `attach --inject` does), lets it time steps for a second, asks it to unload,
and repeats. It prints, per cycle, the stop gdb reported (ptrace attach to detach) and the
job's own longest gap around the injection (the stop, plus the agent's start-up on the job's
main thread at the safe point) and around the unload; and their medians.

Usage::

    python benchmarks/inject_stop.py [--cycles 10]

The job is this file run with ``--job STOP_FILE``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def job(stop_file: str) -> None:
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    print("ready", flush=True)
    gaps: list[tuple[float, float]] = []
    last = time.monotonic()
    while not Path(stop_file).exists():
        loss = model(torch.randn(32, 64)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        time.sleep(0.002)
        now = time.monotonic()
        gaps.append((now, now - last))
        last = now
    print(json.dumps(gaps), flush=True)


def longest_gap(gaps: list[tuple[float, float]], start: float, end: float) -> float:
    return max((gap for at, gap in gaps if start <= at <= end), default=0.0)


def harness(cycles: int) -> None:
    import psutil

    from torchtop.attach.inject import detach, inject

    folder = Path(tempfile.mkdtemp(prefix="torchtop-inject-bench-"))
    stop = folder / "stop"
    process = subprocess.Popen(
        [sys.executable, __file__, "--job", str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.readline()
    target = psutil.Process(process.pid)
    marks: list[tuple[float, float, float, float, float | None]] = []
    for n in range(cycles):
        injected_at = time.monotonic()
        injected = inject(target, (3, 11), folder / f"run-{n}", timeout_s=30)
        loaded_at = time.monotonic()
        time.sleep(1.0)
        unload_at = time.monotonic()
        detach(injected, wait_s=10)
        marks.append((injected_at, loaded_at, unload_at, time.monotonic(), injected.stopped_s))
        time.sleep(0.5)
    stop.touch()
    gaps = [(at, gap) for at, gap in json.loads(process.communicate(timeout=60)[0])]
    print("cycle  stop_ms  job_gap_in_ms  job_gap_out_ms")
    stops, ins, outs = [], [], []
    for n, (start, loaded, unload, unloaded, stopped_s) in enumerate(marks):
        gap_in, gap_out = longest_gap(gaps, start, loaded), longest_gap(gaps, unload, unloaded)
        stops.append((stopped_s or 0.0) * 1000)
        ins.append(gap_in * 1000)
        outs.append(gap_out * 1000)
        print(f"{n:5d}  {stops[-1]:7.0f}  {ins[-1]:13.0f}  {outs[-1]:14.0f}")
    steady = statistics.median(gap for _, gap in gaps) * 1000
    print(
        f"median: stop {statistics.median(stops):.0f} ms, job's longest gap at the injection "
        f"{statistics.median(ins):.0f} ms, at the unload {statistics.median(outs):.0f} ms "
        f"(a steady iteration: {steady:.1f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--job", metavar="STOP_FILE")
    args = parser.parse_args()
    if args.job:
        job(args.job)
    else:
        harness(args.cycles)


if __name__ == "__main__":
    main()
