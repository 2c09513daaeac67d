"""What `torchtop attach`'s stack sampling costs the job it watches, in the job's own steps/s.

The job is `benchmarks/jobs/threads.py` (in-memory data, an MLP, torch's default threads),
which prints `step N time T s` from its own clock every 25 steps. One job runs throughout, and
windows of `--seconds` alternate between three ways of watching it, `--runs` rounds in rotating
order, so the machine's drift (other jobs come and go) falls on all three alike:

* ``bare``         -- nobody looks at it;
* ``python``       -- a Python-only `py-spy dump` of it every `--every-s` (what `run` does,
  every 5 s, for the hot-stacks panel);
* ``native``       -- attach's own `StackCollector(native=True)`, polled every `--every-s`:
  back-to-back `py-spy record --native` chunks (4 s at 4 samples a second) and the job's
  threads read from /proc at each chunk's start and end.

For each window it prints the job's steps/s (from the job's own lines) and the records the
collector gave (dumps, or native chunks), then the medians and the cost against ``bare``.

Usage::

    python benchmarks/attach_cost.py [--runs 4] [--seconds 15] [--every-s 1]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from torchtop.collectors.stacks import StackCollector

JOB = Path(__file__).resolve().parent / "jobs" / "threads.py"
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
) -> tuple[float, int]:
    """The job's steps/s over one window of `mode`, and the records the collector gave."""
    start, records = len(lines), 0
    collector = StackCollector(job.pid, native=mode == "native")
    end_s = time.monotonic() + args.seconds
    while time.monotonic() < end_s:
        tick_s = time.monotonic()
        if mode != "bare" and collector.sample() is not None:
            records += 1
        time.sleep(max(0.0, args.every_s - (time.monotonic() - tick_s)))
    collector.close()
    seen = lines[start:]
    if len(seen) < 2:
        return float("nan"), records
    (first_step, first_s), (last_step, last_s) = seen[0], seen[-1]
    return (last_step - first_step) / (last_s - first_s), records


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
    args = parser.parse_args()
    modes = ["bare", "python", "native"]
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    job, lines = start_job()
    try:
        for run in range(args.runs):
            for mode in modes[run % 3 :] + modes[: run % 3]:
                rate, records = window(job, lines, mode, args)
                rates[mode].append(rate)
                print(f"run {run} {mode:7s} {rate:8.2f} steps/s  {records} records", flush=True)
    finally:
        job.terminate()
        job.wait()
    # Each window against the mean of the two bare windows around it would be finer; the
    # ratio of medians is what the table reports.
    bare = statistics.median(rates["bare"])
    for mode in modes:
        median = statistics.median(rates[mode])
        print(f"{mode:7s} median {median:8.2f} steps/s  cost {1 - median / bare:+.1%}")


if __name__ == "__main__":
    main()
