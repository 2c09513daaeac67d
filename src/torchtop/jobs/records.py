"""What a launch leaves in its run folder: `run.json` as it starts, `exit.json` as it ends.

One writer for `run.json`, whoever launches (`run`, `demo`, `attach`, `tune`, a trial's runs,
a relaunch from the dashboard), so every run folder has the same fields: `overrides` and
`fixes` are empty for a command launched as typed, and the host is named as the agent names it
in its `hello` record (`socket.gethostname()`). Both documents are the schema's Structs
(`runs.records.RunRecord`, `ExitRecord`), written once, atomically (`runs.journal.write_record`),
and returned as written; docs/run-folder.md lists their fields.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import msgspec
import psutil

from torchtop import __version__
from torchtop.model.attach import AttachTarget
from torchtop.model.plan import AppliedFix
from torchtop.runs.environment import speed_environment
from torchtop.runs.identity import NodeIdentity
from torchtop.runs.journal import write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import ExitRecord, RunRecord, Scalar

RUNS_FOLDER = "torchtop-runs"


def write_run_record(
    layout: RunLayout,
    kind: str,
    command: Sequence[str],
    pid: int,
    started_at: float | None = None,
    cwd: str | None = None,
    overrides: Mapping[str, object] | None = None,
    fixes: Sequence[AppliedFix] = (),
    node: NodeIdentity | None = None,
    attached: AttachTarget | None = None,
    env: Mapping[str, str] | None = None,
) -> RunRecord:
    """Write `run.json` for the process `pid` running `command` (`cwd`: torchtop's own when
    None; `started_at`: now when None) and return what was written; `node`: the launch's node
    where several launchers share the run folder; `attached`: the job `attach` found, where it
    has several ranks; `env`: the job's environment, of which the variables that bear on its
    speed are kept (`runs.environment`)."""
    record = RunRecord(
        kind=kind,
        command=list(command),
        cwd=cwd if cwd is not None else os.getcwd(),
        pid=pid,
        started_at=started_at if started_at is not None else time.time(),
        host=socket.gethostname(),
        cpu_count=os.cpu_count(),
        torchtop=__version__,
        overrides={knob: _scalar(value) for knob, value in (overrides or {}).items()},
        fixes=[fix.entry() for fix in fixes],
    )
    if node is not None:
        record = msgspec.structs.replace(record, **_node_fields(node))
    if attached is not None:
        record = msgspec.structs.replace(record, attached=attached)
    if env is not None:
        record = msgspec.structs.replace(record, env=speed_environment(env))
    write_record(layout.run_json, record)
    return record


def environment_of(process: psutil.Process) -> dict[str, str] | None:
    """The environment a job we did not start runs with (attach), where it can be read (the
    same user's process, on Linux); None where it cannot: `run.json` then has no `env`."""
    try:
        return dict(process.environ())
    except (psutil.Error, OSError):
        return None


def _node_fields(node: NodeIdentity) -> dict[str, object]:
    """The node's name and the SLURM variables that were set (the others left out)."""
    fields = {
        "node": node.name,
        "slurm_job_id": node.slurm_job_id,
        "slurm_node_id": node.slurm_node_id,
        "slurm_proc_id": node.slurm_proc_id,
        "slurm_job_nodelist": node.slurm_job_nodelist,
    }
    return {key: value for key, value in fields.items() if value is not None}


def _scalar(value: object) -> Scalar:
    """A knob's value as `run.json` holds it: every knob takes a number, a flag or a word
    (the rule loader checks the fixes, the agent the variable); anything else as its text."""
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def write_exit_record(
    layout: RunLayout,
    how: str,
    exit_status: int | None = None,
    signal_name: str | None = None,
    duration_s: float | None = None,
    stderr_tail: Sequence[str] | None = None,
    log: Path | None = None,
) -> ExitRecord:
    """Write `exit.json`: `how` the job ended (`exited`, `crashed`, `killed`, `stopped`,
    `detached`), its status or the signal that ended it, how long it ran, the last lines of
    its stderr and the file with its whole output (each left out where torchtop did not see
    it: attach)."""
    record = ExitRecord(
        ended_at=time.time(),
        how=how,
        exit_status=exit_status,
        signal=signal_name,
        duration_s=duration_s if duration_s is not None else msgspec.UNSET,
        stderr_tail=list(stderr_tail) if stderr_tail is not None else msgspec.UNSET,
        log=str(log) if log is not None else msgspec.UNSET,
    )
    write_record(layout.exit_json, record)
    return record


def default_run_dir(base: Path | None = None) -> Path:
    """A new folder `./torchtop-runs/<timestamp>` (or under `base`), suffixed `-2`, `-3`, ...
    when a run started in the same second already took the name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = (base or Path.cwd() / RUNS_FOLDER) / stamp
    suffix = 1
    candidate = root
    while candidate.exists():
        suffix += 1
        candidate = root.with_name(f"{stamp}-{suffix}")
    return candidate
