"""What DataLoader workers (and OpenMP pinning) really do to a job on this machine: bare A/B.

Anchors `advice/loader_model.py`: each configuration of one job runs as a bare process (no
torchtop), in alternating rounds (every configuration once per round, in the same order), and
its own printed rate is read (`rate: X steps/s`, or the demo's last `N steps/s`, which counts
its workers' start), after one uncounted run (a cold start's imports). The speedup of
a configuration is its rate over the baseline's in the same round, so a drift of the machine's
load between rounds cancels. Two jobs:

* ``cpu_decode``: tests/workloads/cpu_decode.py, a Dataset that decodes on the CPU (~5% of
  the step), num_workers=0, 2 intra-op threads: the ImageNet trainer's `-j 0` in miniature;
* ``demo``: `python -m torchtop.demo.train`, whose Dataset sleeps 5 ms a sample;
* ``starved``: tests/workloads/starved_options.py with `--sample-sleep-ms 10` (batches of 8,
  64 a pass, workers restarted every pass: no persistent_workers), its rate timed from the
  first batch asked for, so each pass's worker start counts.

Configurations: ``wN`` (N workers) and ``bind`` (OMP_PROC_BIND=close, no workers); the first
is the baseline. Run it on a quiet machine, nothing else busy::

    python benchmarks/loader_fit.py cpu_decode w0 w1 w2 w4 bind
    python benchmarks/loader_fit.py demo w0 w2 w4 w8 w16 w32
    python benchmarks/loader_fit.py starved w16 w8 w32 w64 \\
        --steps 256
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOBS = {
    "cpu_decode": ([sys.executable, str(ROOT / "tests/workloads/cpu_decode.py")], "--workers"),
    "demo": ([sys.executable, "-m", "torchtop.demo.train"], "--num-workers"),
    "starved": (
        [
            sys.executable,
            str(ROOT / "tests/workloads/starved_options.py"),
            "--sample-sleep-ms",
            "10",
        ],
        "--num-workers",
    ),
}
_RATE = re.compile(r"([0-9.]+) steps/s")


def command(job: str, config: str, steps: int) -> tuple[list[str], dict[str, str]]:
    base, flag = JOBS[job]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TORCHTOP_", "OMP_"))}
    if config == "bind":
        return [*base, "--steps", str(steps)], {**env, "OMP_PROC_BIND": "close"}
    return [*base, "--steps", str(steps), flag, config.removeprefix("w")], env


def rate(job: str, config: str, steps: int) -> float:
    argv, env = command(job, config, steps)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=True)
    found = _RATE.findall(done.stdout)
    if not found:
        raise RuntimeError(f"{config}: no rate in {done.stdout[-300:]!r}")
    return float(found[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", choices=sorted(JOBS))
    parser.add_argument("configs", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {c: [] for c in args.configs}
    rate(args.job, args.configs[0], args.steps)  # not counted: a cold first start (imports)
    for round_index in range(args.rounds):
        for config in args.configs:
            rates[config].append(rate(args.job, config, args.steps))
            print(f"round {round_index + 1} {config}: {rates[config][-1]:.2f} steps/s", flush=True)
    base = rates[args.configs[0]]
    print(f"\n| {args.job} | steps/s per round | median | vs {args.configs[0]} per round |")
    print("|---|---|---|---|")
    for config, values in rates.items():
        ratios = ", ".join(f"{v / b:.2f}x" for v, b in zip(values, base, strict=True))
        shown = ", ".join(f"{v:.2f}" for v in values)
        print(f"| {config} | {shown} | {statistics.median(values):.2f} | {ratios} |")


if __name__ == "__main__":
    main()
