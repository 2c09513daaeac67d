"""Shared by the real-job tests: the jobs, quick tuning options, and reading a run's files."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tests.conftest import WORKLOADS
from tests.tables import tables
from torchtop.runs.journal import JournalReader
from torchtop.tuning.tune import TuneOptions

JOBS = WORKLOADS

# Short trials: a real job's verdict and speedup in a minute or two on 2 cores (short runs, and
# at most four rounds: enough for the 99% interval to decide on a 1.6x workers fix whose rounds
# spread by 15%, as they do at load 13 on 2 cores).
QUICK = TuneOptions(
    steps=10,
    warmup_steps=3,
    min_duration_s=1.0,
    max_trials=1,
    run_timeout_s=60.0,
    budget_s=600.0,  # a bound only: a trial adds no round past it (runs take 25 s at load 16)
    max_rounds=4,
)


def job(name: str, *args: str) -> list[str]:
    return [sys.executable, str(JOBS / f"{name}.py"), *args]


def agent_records(run_dir: Path, kind: str) -> list[dict[str, Any]]:
    """Records of `kind` from every agent file of a run folder."""
    found = []
    for path in sorted((run_dir / "events").glob("agent-*.jsonl")):
        found += [r for r in tables(JournalReader(path).read_new(final=True)) if r["kind"] == kind]
    return found
