"""Peak memory of `torchtop analyze TRACE` over its whole process tree, and its wall time.

`analyze` reads a big trace with a forked worker (`traces/parallel.py`), so the memory that
counts is the reader's and the worker's together. Three figures are printed per run:

* ``tree peak``: the largest sum of RSS over the live process tree, sampled every
  `--every-ms` (a lower bound: a peak between two samples is missed);
* ``hwm sum``: the sum over every process ever seen of its own high-water mark (`VmHWM`,
  read at each sample and, for the top process, `ru_maxrss` from `wait4`): an upper bound,
  as if every process peaked at the same instant;
* ``top maxrss``: `ru_maxrss` of the `torchtop` process alone.

Each run also prints the report's SHA-256, so a change that must keep the report identical
can be checked on the same file. `--baseline PATH` names another checkout's `src` to run
alternately with this one (same file, rounds alternating which goes first), so the ratio of
the two is taken on a loaded machine in the same minutes.

Usage::

    python benchmarks/analyze_memory.py TRACE [--repeat 3] [--baseline /other/checkout/src]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from analyze_speed import child_pids  # run as a script: its folder is on the path

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


@dataclass
class Run:
    """One `analyze` run: wall time, memory figures (KiB) and the report's digest."""

    label: str
    wall_s: float
    tree_peak_kib: int
    hwm_sum_kib: int
    top_maxrss_kib: int
    report_sha256: str
    exit_code: int


def _status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(child_pids(pid))
    return found


def run_once(label: str, trace: Path, src: Path, every_s: float) -> Run:
    """Run `analyze TRACE --format json` with `src` first on the path; sample its tree."""
    env = dict(os.environ, PYTHONPATH=str(src))
    argv = [sys.executable, "-m", "torchtop", "analyze", str(trace), "--format", "json"]
    hwm: dict[int, int] = {}
    peak = [0]
    stop = threading.Event()
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)

        def watch() -> None:
            while not stop.wait(every_s):
                total = 0
                for pid in _tree(proc.pid):
                    total += _status_kib(pid, "VmRSS:")
                    hwm[pid] = max(hwm.get(pid, 0), _status_kib(pid, "VmHWM:"))
                peak[0] = max(peak[0], total)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.perf_counter() - started
        stop.set()
        watcher.join()
        out.seek(0)
        digest = hashlib.sha256(out.read()).hexdigest()
    hwm[proc.pid] = max(hwm.get(proc.pid, 0), usage.ru_maxrss)
    return Run(
        label,
        wall_s,
        peak[0],
        sum(hwm.values()),
        usage.ru_maxrss,
        digest,
        os.waitstatus_to_exitcode(status),
    )


def _line(run: Run) -> str:
    return (
        f"{run.label:>9}  wall {run.wall_s:6.2f} s  tree peak {run.tree_peak_kib * 1024 / MIB:7.0f}"
        f" MiB  hwm sum {run.hwm_sum_kib * 1024 / MIB:7.0f} MiB  top maxrss"
        f" {run.top_maxrss_kib * 1024 / MIB:7.0f} MiB  exit {run.exit_code}"
        f"  report {run.report_sha256[:16]}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--every-ms", type=float, default=20.0, help="sampling period")
    ap.add_argument("--baseline", type=Path, help="another checkout's src, run alternately")
    args = ap.parse_args(argv)
    sides = [("this", REPO / "src")]
    if args.baseline is not None:
        sides.append(("baseline", args.baseline))
    size_gb = args.trace.stat().st_size / 1e9
    print(f"{args.trace} ({size_gb:.2f} GB), load average {os.getloadavg()[0]:.1f}", flush=True)
    runs: list[Run] = []
    for round_ in range(args.repeat):
        order = sides if round_ % 2 == 0 else sides[::-1]
        for label, src in order:
            runs.append(run_once(label, args.trace, src, args.every_ms / 1000))
            print(_line(runs[-1]), flush=True)
    for label, _ in sides:
        mine = [r for r in runs if r.label == label]
        print(
            f"{label:>9}  median wall {statistics.median(r.wall_s for r in mine):.2f} s,"
            f" max hwm sum {max(r.hwm_sum_kib for r in mine) * 1024 / MIB:.0f} MiB,"
            f" reports {sorted({r.report_sha256[:16] for r in mine})}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
