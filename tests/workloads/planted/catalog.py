"""The planted CPU jobs: one per bottleneck class, each long enough to attach to.

They are the project's existing jobs (tests/workloads), run with a step count
that keeps them going for minutes, so `torchtop attach` meets them mid-loop; a test kills them.
Each entry says what `torchtop run --headless` says of the same job (its agent's timed steps
and profiler window): the outside truth the attach verdict is checked against. Measured on the
2-core CPU machine of docs/benchmarks.md, torch 2.13.0 (`run`'s breakdown of the same command
with its step count cut to 40-80 steps).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

JOBS = Path(__file__).resolve().parents[1]
LONG = "1000000"


@dataclass(frozen=True)
class PlantedJob:
    name: str
    command: tuple[str, ...]
    env: dict[str, str]
    bottleneck: str
    """The class `torchtop run` names for this job."""
    run_says: str
    """`torchtop run`'s breakdown and findings of it, in words."""
    finding: str | None
    """The finding attach must show: run's, unless run's needs the job's settings (which only
    an agent reads; then the one the same evidence gives from outside) or sits too close to
    its threshold for a few dozen samples (None)."""
    at_least: dict[str, float]
    """Breakdown shares attach must reach: well inside run's, for sampling noise."""
    torchrun: bool = False
    """Started under `torchrun --nproc-per-node 2`: attach to rank 0's process."""


PLANTED = (
    PlantedJob(
        "input-bound",
        (sys.executable, str(JOBS / "sleepy_input.py"), "--sample-sleep-ms", "1"),
        {},
        "dataloader",
        "dataloader 67%, cpu_exec 27% over 78 steps; dataloader-single-process (num_workers=0)",
        "dataloader-starved",
        {"dataloader": 0.3},
    ),
    PlantedJob(
        "python-overhead",
        (sys.executable, str(JOBS / "python_overhead.py")),
        {"STEPS": LONG},
        "cpu",
        "other (between operators) 45%, cpu_exec 47%, memcpy 9% over 58 steps; python-overhead",
        # attach read 27-47% between operators (4 runs) against run's 45%; python-overhead
        # fires at 25%: too close to ask of 30 samples.
        None,
        {"other": 0.15},
    ),
    PlantedJob(
        "compute",
        (sys.executable, str(JOBS / "compute_bound.py")),
        {"EPOCHS": LONG},
        "cpu",
        "cpu_exec 94%, memcpy 6% over 30 steps; cpu-math-bound",
        "cpu-math-bound",
        {"cpu_exec": 0.6},
    ),
    PlantedJob(
        "copies",
        (sys.executable, str(JOBS / "copy_heavy.py")),
        {"STEPS": LONG},
        "memcpy",
        "memcpy 86%, cpu_exec 13% over 38 steps; host-copy-heavy",
        "host-copy-heavy",
        {"memcpy": 0.5},
    ),
    PlantedJob(
        "thread-settings",
        (sys.executable, str(JOBS / "threads.py")),
        {"OMP_NUM_THREADS": "8"},
        "cpu",
        "cpu_exec 96%; 8 intra-op threads on 2 cores, over 148 steps; thread-oversubscription",
        "thread-oversubscription",
        {"cpu_exec": 0.6},
    ),
    PlantedJob(
        "ddp-gloo",
        (
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            str(JOBS / "ddp_comm.py"),
        ),
        {"STEPS": LONG},
        "communication",
        "communication 69%, cpu_exec 24% over 38 steps (both ranks); communication-heavy",
        "communication-heavy",
        {"communication": 0.3},
        torchrun=True,
    ),
)
