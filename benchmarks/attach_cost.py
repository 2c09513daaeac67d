"""What `torchtop attach`'s stack sampling costs the job it watches, in the job's own steps/s.

The job is `tests/workloads/threads.py` (in-memory data, an MLP, torch's default threads),
which prints `step N time T s` from its own clock every 25 steps. One job runs throughout, and
windows of `--seconds` alternate between the ways of watching it, `--runs` rounds in rotating
order, so the machine's drift (other jobs come and go) falls on all of them alike:

* ``bare``         -- nobody looks at it;
* ``python``       -- a Python-only `py-spy dump` of it every `--every-s` (what `run` does,
  every 5 s, for the hot-stacks panel);
* ``native``       -- attach's `StackCollector(native=True)` as it was before its pace:
  back-to-back `py-spy record --native` chunks of 4 s at 4 samples a second (a budget of a
  whole core keeps every chunk at 4 s), the job's threads read from /proc at each chunk's
  start and end;
* ``paced``        -- the same with attach's default pace (`collectors.pace`: two 4 s chunks,
  then chunks as long as keep py-spy's own CPU under 1% of a core). Its collector lives for
  one window, so a window shorter than about three minutes measures mostly the fast start:
  give `--seconds 240` for the steady pace.

Austin's native sampler (`austinp`, in the `austin-dist` wheel) was the other candidate; its
only wheel (4.0.0) needs glibc 2.38, so it has no row where it does not run (Debian 12 has
2.36).

For each window it prints the job's steps/s (from the job's own lines), the records the
collector gave (dumps, or native chunks) and the CPU-seconds per minute py-spy reported for
the native chunks it finished, then the medians and the cost against ``bare``.

Usage::

    python benchmarks/attach_cost.py [--runs 4] [--seconds 15] [--every-s 1] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec

from torchtop.collectors.stacks import StackCollector
from torchtop.runs.records import StacksSample

JOB = Path(__file__).resolve().parents[1] / "tests" / "workloads" / "threads.py"
MODES = ("bare", "python", "native", "paced")
NATIVE = ("native", "paced")
WARMUP_S = 3.0
"""After the job's first printed step."""


def start_job() -> tuple[subprocess.Popen[str], list[tuple[int, float]]]:
    """The job, and the (step, seconds) lines it prints, filled in as it prints them."""
    job = subprocess.Popen(
        [sys.executable, "-u", str(JOB)], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    lines: list[tuple[int, float]] = []
    assert job.stdout is not None
    threading.Thread(target=_read_steps, args=(job.stdout, lines), daemon=True).start()
    deadline_s = time.monotonic() + 120
    while not lines and time.monotonic() < deadline_s:  # imports take long on a busy machine
        time.sleep(0.2)
    time.sleep(WARMUP_S)
    return job, lines


def window(
    job: subprocess.Popen[str], lines: list[tuple[int, float]], mode: str, args: argparse.Namespace
) -> tuple[float, int, float]:
    """The job's steps/s over one window of `mode`, the records the collector gave, and the
    sampler's own CPU-seconds per minute over the native chunks it finished."""
    start, records, cpu_s, sampled_s = len(lines), 0, 0.0, 0.0
    budget = 1.0 if mode == "native" else 0.01
    collector = StackCollector(job.pid, native=mode in NATIVE, budget_share=budget)
    end_s = time.monotonic() + args.seconds
    while time.monotonic() < end_s:
        tick_s = time.monotonic()
        record = collector.sample() if mode != "bare" else None
        if record is not None:
            records += 1
            for process in msgspec.convert(record, StacksSample).processes:
                if not isinstance(process.sampler, msgspec.UnsetType):
                    cpu_s += process.sampler.cpu_s
                    sampled_s += process.sampler.chunk_s
        time.sleep(max(0.0, args.every_s - (time.monotonic() - tick_s)))
    collector.close()
    per_min = 60 * cpu_s / sampled_s if sampled_s else float("nan")
    seen = lines[start:]
    if len(seen) < 2:
        return float("nan"), records, per_min
    (first_step, first_s), (last_step, last_s) = seen[0], seen[-1]
    return (last_step - first_step) / (last_s - first_s), records, per_min


def _read_steps(stream: object, lines: list[tuple[int, float]]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        words = str(line).split()
        if len(words) == 5 and words[0] == "step":
            lines.append((int(words[1]), float(words[3])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--every-s", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="one round of 30 s windows")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.seconds = 1, 30.0
    modes = list(MODES)
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    costs: dict[str, list[float]] = {mode: [] for mode in modes}
    job, lines = start_job()
    try:
        for run in range(args.runs):
            turn = run % len(modes)
            for mode in modes[turn:] + modes[:turn]:
                rate, records, per_min = window(job, lines, mode, args)
                rates[mode].append(rate)
                costs[mode].append(per_min)
                print(
                    f"run {run} {mode:7s} {rate:8.2f} steps/s  {records} records  "
                    f"sampler {per_min:.2f} CPU-s/min",
                    flush=True,
                )
    finally:
        job.terminate()
        job.wait()
    # Each window against the mean of the two bare windows around it would be finer; the
    # ratio of medians is what the table reports.
    bare = statistics.median(rates["bare"])
    for mode in modes:
        median = statistics.median(rates[mode])
        cpu = statistics.median(costs[mode])
        print(
            f"{mode:7s} median {median:8.2f} steps/s  cost {1 - median / bare:+.1%}  "
            f"sampler {cpu:.2f} CPU-s/min"
        )


if __name__ == "__main__":
    main()
