"""Who this process is in the job: pid, host, and rank as the torchrun environment says.

The trace files are named after the worker the way `tensorboard_trace_handler` names them:
`rank<R>` when the launcher set `RANK`, else `<hostname>_<pid>` (the handler's default).
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from torchtop.runs.records import Hello


@dataclass(frozen=True)
class Identity:
    pid: int
    ppid: int
    host: str
    rank: int | None
    local_rank: int | None
    world_size: int | None
    local_world_size: int | None = None

    @property
    def worker(self) -> str:
        return f"rank{self.rank}" if self.rank is not None else f"{self.host}_{self.pid}"


def read_identity(env: Mapping[str, str]) -> Identity:
    return Identity(
        pid=os.getpid(),
        ppid=os.getppid(),
        host=socket.gethostname(),
        rank=_int_or_none(env.get("RANK")),
        local_rank=_int_or_none(env.get("LOCAL_RANK")),
        world_size=_int_or_none(env.get("WORLD_SIZE")),
        local_world_size=_int_or_none(env.get("LOCAL_WORLD_SIZE")),
    )


def started_by_multiprocessing() -> bool:
    """A multiprocessing child (spawned, or forked by a forkserver), or the forkserver itself.

    Most are DataLoader workers, which never step; a `torch.multiprocessing.spawn` rank does.
    A spawned child imports torch while it unpickles its task (`_inheriting` is set then) or
    once it runs (it has a parent process); the forkserver has imported its own module.
    """
    if "multiprocessing.forkserver" in sys.modules:
        return True
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return False
    inheriting = getattr(process.current_process(), "_inheriting", False)
    return bool(inheriting) or process.parent_process() is not None


def hello_record(identity: Identity, torch_version: str, now_s: float) -> Hello:
    return Hello(
        t=now_s,
        pid=identity.pid,
        ppid=identity.ppid,
        rank=identity.rank,
        local_rank=identity.local_rank,
        world_size=identity.world_size,
        argv=list(sys.argv),
        python=sys.version.split()[0],
        torch=torch_version,
        host=identity.host,
        local_world_size=identity.local_world_size,
    )


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None
