"""What `torchtop attach PID` attached to: the pid asked for, the job it belongs to, its ranks.

One value for the three places that name it: `run.json` (the launch record, so a recorded attach
reads the same later), the report (`source.attached`) and the dashboard's header. Plain data,
worked out by `attach.attach` from the process tree when attach starts.
"""

from __future__ import annotations

import msgspec


class SamplerCost(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What attach's native sampler costs now: the newest chunk of each sampled process, its
    pace and its own CPU as a share of one core (the mean over the processes), against the
    budget (`attach --sample-budget`)."""

    processes: int
    chunk_s: int
    rate_per_s: int
    cpu_share: float
    budget_share: float

    def words(self) -> str:
        each = " each" if self.processes > 1 else ""
        return (
            f"sampling {self.rate_per_s}/s in {self.chunk_s} s chunks, "
            f"{self.cpu_share:.1%} of a core{each} (budget {self.budget_share:.1%})"
        )


class AttachedRank(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pid: int
    rank: int | None = None
    """RANK from its environment, or its place in start order (`AttachTarget.numbered_by`)."""
    local_rank: int | None = None
    world_size: int | None = None
    omp_num_threads: str | msgspec.UnsetType | None = msgspec.UNSET
    """`OMP_NUM_THREADS` from its environment, as it was started (None: unset or unreadable;
    absent in run folders written before it existed)."""
    cpus: int | msgspec.UnsetType | None = msgspec.UNSET
    """The CPUs its threads may use, read when attach started."""


class AttachTarget(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pid: int
    """The pid the user gave."""
    role: str
    """`launcher` (its python children are the ranks), `parent` (a script that started its
    ranks itself: `mp.spawn`) or `rank` (one of several)."""
    root_pid: int
    """The launcher, or the ranks' shared parent, or the pid itself: whose tree is sampled."""
    launcher: str | None = None
    """`torchrun`, `torch.distributed.run`, ...: None for ranks with no launcher above them."""
    ranks: tuple[AttachedRank, ...] = ()
    numbered_by: str = "environment"
    """`environment` (each rank's RANK) or `start order` (an environment could not be read)."""
    watched: str = "stack samples, no agent inside"
    """How the job is watched: stack samples, or through its agent's run folder."""

    @property
    def job_words(self) -> str:
        """`torchrun PID 123, 2 ranks`: the job, as the header and the report name it."""
        count = len(self.ranks)
        ranks = f"{count} rank{'s' if count != 1 else ''}"
        world = max((r.world_size or 0 for r in self.ranks), default=0)
        if world > count:  # one node's part of a job on several
            ranks = f"{count} of {world} ranks"
        if self.launcher is not None:
            return f"{self.launcher} PID {self.root_pid}, {ranks}"
        return f"{ranks} under PID {self.root_pid}"

    def rank_of(self, pid: int) -> AttachedRank | None:
        return next((r for r in self.ranks if r.pid == pid), None)

    def announcement(self) -> str:
        """The one stderr line that says what was attached to."""
        listed = ", ".join(f"rank {r.rank} PID {r.pid}" for r in self.ranks)
        count = len(self.ranks)
        order = " (numbered by start order: no RANK in an environment, or one unreadable)"
        order = order if self.numbered_by != "environment" else ""
        if self.role == "parent":
            return (
                f"PID {self.pid} started {count} ranks of one job; watching them: {listed}"
                f"{order} ({self.watched})"
            )
        if self.role == "launcher":
            return (
                f"PID {self.pid} is {self.launcher}; watching its {count} ranks: {listed}"
                f"{order} ({self.watched})"
            )
        own = self.rank_of(self.pid)
        what = f"rank {own.rank}" if own is not None else "a process"
        above = (
            f"{self.launcher} PID {self.root_pid}"
            if self.launcher is not None
            else f"a job of {count} ranks under PID {self.root_pid}"
        )
        return (
            f"PID {self.pid} is {what} of {above}: watching the job's {count} ranks: {listed}"
            f"{order} ({self.watched})"
        )
