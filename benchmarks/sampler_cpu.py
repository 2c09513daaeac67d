"""The CPU one way of sampling a running job costs, as one process to time from outside.

Runs attach's stack collector against `--pid` for `--seconds`, polled every second as attach
polls it, and exits: timed from outside (`/usr/bin/time -v`, or any harness that reads the
finished process's rusage, which holds its reaped py-spy children), its user+system seconds
are the sampler's own CPU over that span. Start the job first
(`python tests/workloads/threads.py`), then time each mode in turn against it:

* ``python`` -- a Python-only `py-spy dump` every second (the noise floor of reading the job);
* ``native`` -- `py-spy record --native` in back-to-back 4 s chunks (attach before its pace);
* ``paced``  -- attach's default pace (`collectors.pace`, 1% of a core after a fast start).

Usage::

    /usr/bin/time -v python benchmarks/sampler_cpu.py --pid PID --mode paced --seconds 120
"""

from __future__ import annotations

import argparse
import time

from torchtop.collectors.stacks import StackCollector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--mode", choices=("python", "native", "paced"), required=True)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    budget = 1.0 if args.mode == "native" else 0.01
    collector = StackCollector(args.pid, native=args.mode != "python", budget_share=budget)
    records = 0
    end_s = time.monotonic() + args.seconds
    while time.monotonic() < end_s:
        if collector.sample() is not None:
            records += 1
        time.sleep(1.0)
    collector.close()
    print(f"{args.mode}: {records} records in {args.seconds:.0f} s")


if __name__ == "__main__":
    main()
