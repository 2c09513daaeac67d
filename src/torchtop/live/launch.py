"""Start a training command with the agent inside it, and stop it gracefully.

The job runs in its own process group (so `torchrun` and every worker it starts can be stopped
together), with the agent's `sitecustomize` first on `PYTHONPATH` and `TORCHTOP_RUN_DIR` naming
the run folder; its standard streams are the user's own. Stopping is SIGINT to the group (a
KeyboardInterrupt lets the job's own cleanup run), then SIGTERM, then SIGKILL, each after a
grace period.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from torchtop import __version__
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RUN_SCHEMA, RunLayout

BOOTSTRAP_DIR = Path(__file__).resolve().parents[1] / "agent" / "bootstrap"
STOP_GRACE_S = 5.0


def job_environment(run_dir: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + existing if existing else "")
    env["TORCHTOP_RUN_DIR"] = str(run_dir.resolve())
    return env


@dataclass
class Job:
    """A launched training command and how it ended."""

    command: list[str]
    layout: RunLayout
    process: subprocess.Popen[bytes]
    started_at: float
    stopped_by_us: bool = False
    ending: dict[str, object] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGINT, then SIGTERM, then SIGKILL to the job's whole process group."""
        self.stopped_by_us = True
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if self.process.poll() is not None:
                break
            _signal_group(self.process.pid, sig)
            try:
                self.process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                continue
        # Workers that outlived their parent (a torchrun agent killed hard) go with the group.
        _signal_group(self.process.pid, signal.SIGKILL)

    def record_exit(self) -> dict[str, object]:
        status = self.process.wait()
        signal_name = None
        if status < 0:
            signal_name = signal.Signals(-status).name
        if self.stopped_by_us:
            how = "stopped"
        elif signal_name:
            how = "killed"
        else:
            how = "exited" if status == 0 else "crashed"
        self.ending = {
            "kind": "exit",
            "ended_at": time.time(),
            "how": how,
            "exit_status": status if status >= 0 else None,
            "signal": signal_name,
            "duration_s": time.time() - self.started_at,
        }
        write_once(self.layout.exit_json, self.ending)
        return self.ending

    def shell_status(self) -> int:
        """The status a shell would report for the job: its code, or 128 + the signal."""
        status = self.process.wait()
        return status if status >= 0 else 128 - status


def launch(
    command: Sequence[str],
    run_dir: Path,
    kind: str = "run",
    output: Path | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> Job:
    """Start the job; its stdout and stderr go to `output` when given (the dashboard owns the
    terminal then), else to the user's own streams. `extra_env` (a `torchtop.toml`'s
    environment and overrides) is added to this process's environment."""
    layout = RunLayout(run_dir)
    layout.create()
    started = time.time()
    log = output.open("ab") if output is not None else None
    try:
        process = subprocess.Popen(
            list(command),
            env=job_environment(run_dir, {**os.environ, **(extra_env or {})}),
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT if log is not None else None,
        )
    finally:
        if log is not None:
            log.close()
    write_run_record(layout, kind, command, process.pid, started)
    return Job(list(command), layout, process, started)


def write_run_record(
    layout: RunLayout, kind: str, command: Sequence[str], pid: int, started: float | None = None
) -> None:
    write_once(
        layout.run_json,
        {
            "schema": RUN_SCHEMA,
            "kind": kind,
            "command": list(command),
            "cwd": os.getcwd(),
            "pid": pid,
            "started_at": started if started is not None else time.time(),
            "host": socket.gethostname(),
            "cpu_count": os.cpu_count(),
            "torchtop": __version__,
        },
    )


def default_run_dir(base: Path | None = None) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = (base or Path.cwd() / "torchtop-runs") / stamp
    suffix = 1
    candidate = root
    while candidate.exists():
        suffix += 1
        candidate = root.with_name(f"{stamp}-{suffix}")
    return candidate


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
