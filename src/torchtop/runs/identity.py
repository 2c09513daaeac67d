"""Which node a launcher is, and where in a shared run folder it writes.

Several launchers (one per node of a multi-node job) may share one run folder on a shared
filesystem. Each then writes a whole run folder of its own under `RUN/nodes/<node>/`, so no
file ever has two writers and every writer below (`jobs/`, the agent through
`TORCHTOP_RUN_DIR`, the collectors) keeps writing a plain `RunLayout`. A launcher is in this
multi-node mode when `TORCHTOP_NODE` names it, when SLURM says the job spans several nodes, or
when the folder already holds `nodes/`; otherwise the folder keeps the single-node layout.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from torchtop.runs.node import NODE_VARIABLE, node_name

NODES_FOLDER = "nodes"
SLURM_NODE_COUNT = ("SLURM_JOB_NUM_NODES", "SLURM_NNODES")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class NodeIdentity:
    """A node's name and what SLURM says of it (None where SLURM did not set it)."""

    name: str
    slurm_job_id: str | None = None
    slurm_node_id: int | None = None
    slurm_proc_id: int | None = None
    slurm_job_nodelist: str | None = None


def safe_name(name: str) -> str:
    """`name` as one folder name: runs of other characters become `_`; never empty, never
    starting with a dot (no `..`, no hidden folder)."""
    cleaned = _UNSAFE.sub("_", name.strip()).lstrip("._")
    return cleaned or "node"


def node_identity(env: Mapping[str, str]) -> NodeIdentity:
    """This node: `TORCHTOP_NODE` when set, else the hostname; SLURM's variables when present."""
    name = node_name(env)
    return NodeIdentity(
        name=safe_name(name),
        slurm_job_id=env.get("SLURM_JOB_ID") or None,
        slurm_node_id=_integer(env.get("SLURM_NODEID")),
        slurm_proc_id=_integer(env.get("SLURM_PROCID")),
        slurm_job_nodelist=env.get("SLURM_JOB_NODELIST") or None,
    )


def is_multi_node(env: Mapping[str, str], run_dir: Path) -> bool:
    if env.get(NODE_VARIABLE):
        return True
    if any((_integer(env.get(name)) or 0) > 1 for name in SLURM_NODE_COUNT):
        return True
    return (run_dir / NODES_FOLDER).is_dir()


def node_dir(run_dir: Path, name: str) -> Path:
    return run_dir / NODES_FOLDER / name


def launch_dir(run_dir: Path, env: Mapping[str, str]) -> tuple[Path, NodeIdentity | None]:
    """Where this launcher writes its run folder, and its node when in multi-node mode."""
    if not is_multi_node(env, run_dir):
        return run_dir, None
    identity = node_identity(env)
    return node_dir(run_dir, identity.name), identity


def node_folders(run_dir: Path) -> list[Path]:
    """The node folders of a shared run folder, by name (none for a single-node folder)."""
    nodes = run_dir / NODES_FOLDER
    if not nodes.is_dir():
        return []
    return sorted(p for p in nodes.iterdir() if p.is_dir())


def _integer(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None
