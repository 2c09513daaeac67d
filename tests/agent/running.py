"""Run a real job under the agent (or bare) in a subprocess and read what it left behind.

The job gets the environment `torchtop run` gives it (`jobs.env.job_environment`); it runs as a
plain child, its output captured, so the run folder holds only what the agent wrote."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import WORKLOADS
from tests.tables import tables
from torchtop.jobs.env import job_environment, with_bootstrap
from torchtop.runs.journal import JournalReader

JOBS = WORKLOADS
JOB_TIMEOUT_S = 120


@dataclass(frozen=True)
class Finished:
    run_dir: Path
    returncode: int
    stdout: str
    stderr: str

    def event_files(self) -> list[Path]:
        return sorted((self.run_dir / "events").glob("agent-*.jsonl"))

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The records of the job's one agent file (asserts there is exactly one)."""
        files = self.event_files()
        assert len(files) == 1, f"expected one agent file, found {files}\n{self.stderr}"
        found = tables(JournalReader(files[0]).read_new(final=True))
        return [r for r in found if kind is None or r["kind"] == kind]

    def last_settings(self) -> dict[str, Any]:
        settings = self.records("settings")
        assert settings, f"no settings record\n{self.stderr}"
        return settings[-1]


def run_job(
    run_dir: Path,
    job: str | list[str],
    *args: str,
    extra_env: dict[str, str] | None = None,
    with_agent: bool = True,
    cwd: Path | None = None,
) -> Finished:
    """`python workloads/<job>.py ARGS` (or `python -c ...`), under the agent by default."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}
    base.update(extra_env or {})
    env = job_environment(run_dir, base) if with_agent else base
    command = (
        [sys.executable, *job]
        if isinstance(job, list)
        else [sys.executable, str(JOBS / f"{job}.py")]
    )
    result = subprocess.run(
        [*command, *args],
        env=env,
        cwd=cwd or run_dir.parent,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S,
        check=False,
    )
    return Finished(run_dir, result.returncode, result.stdout, result.stderr)


def bootstrap_only_env(extra_path: list[Path]) -> dict[str, str]:
    """PYTHONPATH with the bootstrap first, and no TORCHTOP_ variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}
    env["PYTHONPATH"] = with_bootstrap(os.pathsep.join(map(str, extra_path)))
    return env
