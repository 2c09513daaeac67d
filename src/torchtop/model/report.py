"""A whole report: where the data came from, the job's verdict, each rank's, and the trials."""

from __future__ import annotations

import msgspec

from torchtop.model.analysis import RankAnalysis
from torchtop.model.attach import AttachTarget, SamplerCost
from torchtop.model.findings import Verdict
from torchtop.model.memory import OutOfMemory
from torchtop.model.settings import JobSettings
from torchtop.model.timeline import Timeline
from torchtop.model.trial_entry import TrialEntry


class StackLine(msgspec.Struct, frozen=True):
    """One frame of a stack dump."""

    function: str | None = None
    file: str | None = None
    line: int | None = None


class LastStack(msgspec.Struct, frozen=True):
    """A process's newest stack dump (py-spy, by the launcher): where a rank that ended was."""

    t: float
    """When it was taken (Unix time)."""
    frames: tuple[StackLine, ...] = ()
    """Its main thread's frames, innermost first."""


class RankStanding(msgspec.Struct, frozen=True):
    """How one rank of a recorded job of several compares with its peers, and how it ended
    (`assess.ranks`); traces have none, so their reports do not change."""

    straggler: bool = False
    slower_by: float | None = None
    """How much longer its busy time (step wall minus its wait) is than its peers' median."""
    culprit_share: float | None = None
    """The share of the judged blocks of steps in which it was the slowest (the others waited
    on it), over all the steps its ranks share (`assess.stragglers`)."""
    since_step: int | None = None
    since_t: float | None = None
    """The first step (and its Unix end time) of its current run as the slowest: a counted
    step, the first judged where it was the slowest from the start."""
    waited_share: float | None = None
    """A straggler's peers' wait for it, as a share of its step (its excess busy time over its
    step wall, the median over its blocks)."""
    chance: float | None = None
    """How likely ranks alike would make it the slowest in as many blocks by chance."""
    blocks_judged: int | None = None
    """How many blocks of `BLOCK_STEPS` steps were compared (every rank gets it)."""
    judged_steps: tuple[int, int] | None = None
    """The first and last step numbers compared: counted steps every judged rank has."""
    ended: str | None = None
    """`exit N`, `signal NAME`, `silent since <ISO time>`, or None while it runs."""
    last_stack: LastStack | None = None
    """Where a rank that ended otherwise than `exit 0` (or fell silent) last was seen."""


class Restart(msgspec.Struct, frozen=True):
    """An earlier process of a rank that its launcher restarted under a new pid."""

    pid: int
    until_t: float
    """When the rank's next pid was first seen, or its agent said hello (Unix time)."""
    stack_samples: int | None = None
    """Its main thread's stack samples over the watch (None: nothing sampled it)."""
    steps_count: int | None = None
    """The steps its agent timed (None: no agent inside, under `attach`)."""


class RankReport(msgspec.Struct, frozen=True):
    analysis: RankAnalysis
    verdict: Verdict
    node: str | None = None
    """The node the rank ran on, in a run several nodes' launchers shared."""
    standing: RankStanding | None = None
    """Straggler or not, and how the rank ended: for a recorded run of several ranks."""
    pid: int | None = None
    """The rank's process, where `attach` found the ranks from outside (none otherwise)."""
    restarts: tuple[Restart, ...] = ()
    """Its earlier processes, oldest first, where its launcher restarted it (`attach`)."""

    @property
    def restarted_words(self) -> str | None:
        """`restarted · PID 5678 (was 1234)`, as the ranks table and the text report say it;
        None for a rank never restarted."""
        if not self.restarts or self.pid is None:
            return None
        times = f" {len(self.restarts)}x" if len(self.restarts) > 1 else ""
        was = ", ".join(str(r.pid) for r in self.restarts)
        return f"restarted{times} · PID {self.pid} (was {was})"


class NodeReport(msgspec.Struct, frozen=True):
    """One node of a run several launchers shared: its ranks and its counters' summary."""

    name: str
    ranks: tuple[int | None, ...]
    host: str | None = None
    cpu_mean_pct: float | None = None
    mem_used_bytes: float | None = None
    """The newest reading."""
    gpu_mean_utilization_pct: float | None = None
    ended: str | None = None
    """How its launcher's job ended (`exit.json`'s `how`), or None while it runs."""
    answering: bool | None = None
    """Whether its `--serve` stream answers; None when the node is read from a folder."""
    last_seen_epoch_s: float | None = None
    """When its stream last answered (followed through `--serve` only)."""
    command: tuple[str, ...] = ()
    """The job command its launcher ran (`run.json`), for the change a fix needs there."""


class WindowCall(msgspec.Struct, frozen=True):
    """What one profiler window alone would have said: the steps it profiled, its verdict's
    class, and whether that is the run's (None while the run has no verdict)."""

    rank: int | None
    first_step: int | None
    last_step: int | None
    bottleneck: str
    agrees: bool | None


class JobExit(msgspec.Struct, frozen=True):
    """How a job torchtop launched ended (`exit.json`): the report's `exit`."""

    how: str | None = None
    """`exited`, `crashed`, `killed`, `stopped` (by torchtop)."""
    status: int | None = None
    signal: str | None = None
    stderr_tail: tuple[str, ...] = ()
    """The last lines the job wrote to stderr."""
    log: str | None = None
    """The file that holds the job's whole output (its stderr, where stdout was a terminal)."""
    rank: int | None = None
    """A job of several ranks: the rank that failed first (`assess.ending.first_failed_rank`)."""
    rank_ended: str | None = None
    """How that rank ended, as its parent saw it (`exit 1`, `signal SIGKILL`)."""
    rank_error: tuple[str, ...] = ()
    """That rank's own uncaught error, as it printed it to stderr (its agent's record): the
    cause, where the job's stderr tail is its launcher's summary."""

    duration_s: float | None = None
    """How long the job ran, from its start to its end, as torchtop saw it."""

    @property
    def failed(self) -> bool:
        """It ended by itself, and not well: a non-zero status or a signal."""
        return self.how in ("crashed", "killed")

    def headline(self) -> str:
        """`the job crashed with exit status 1`; a stop is torchtop's, not the job's failure:
        `the job was stopped by torchtop after 5 s` (its SIGINT is how it was asked)."""
        if self.how == "stopped":
            after = "" if self.duration_s is None else f" after {self.duration_s:.0f} s"
            return f"the job was stopped by torchtop{after}"
        return f"the job {self.how} with {self.words()}"

    def words(self) -> str:
        """`exit status 1`, `signal SIGABRT`, `status 0`: how it ended, in a few words."""
        if self.signal:
            return f"signal {self.signal}"
        return f"exit status {self.status}" if self.status is not None else "an unknown status"


class Report(msgspec.Struct, frozen=True):
    source_kind: str
    """trace | run | attach | demo | tune"""
    paths: tuple[str, ...]
    job: RankAnalysis
    """The job as a whole: a single rank's analysis, or the ranks' means."""
    verdict: Verdict
    ranks: tuple[RankReport, ...] = ()
    command: tuple[str, ...] | None = None
    pid: int | None = None
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)
    trials: tuple[TrialEntry, ...] = ()
    """A/B trials of fixes (`tune`'s, or those accepted in the dashboard), each the contract's
    `trials` entry: `fixes`, `baseline_steps_per_s`, `trial_steps_per_s`, `speedup`, `kept`,
    and the trial's evidence (`trials.trial.trial_entry`)."""
    nodes: tuple[NodeReport, ...] = ()
    """Each node of a run several nodes' launchers shared; empty for one launcher's run."""
    attached: AttachTarget | None = None
    """`attach` to a job of several ranks: what the pid given turned out to be."""
    windows: tuple[WindowCall, ...] = ()
    """Every profiler window the verdict pooled, each with what it alone said; empty for a
    trace or a run with no window."""
    exit: JobExit | None = None
    """How the job ended, where torchtop launched it and it has ended (`run`, `demo`, `tune`)."""
    out_of_memory: OutOfMemory | None = None
    """The job died of out-of-memory (its stderr says so), with the last peak measured."""
    sampler: SamplerCost | None = None
    """`attach` without an agent: what its native stack sampler costs now (the header)."""
    settings: JobSettings | None = None
    """What a recorded run ran with (its launch and its agent's settings); None for a trace."""
    timeline: Timeline | None = None
    """The whole run in buckets of time (steps/s, memory, stalls); None for a trace."""


class SkippedTrace(msgspec.Struct, frozen=True):
    """A trace file of a folder that could not be read (empty, not JSON, cut before its first
    whole event): named in the report, never the end of the others."""

    path: str
    problem: str

    def note(self) -> str:
        return f"skipped {self.path}: {self.problem}"


class JobReports(msgspec.Struct, frozen=True):
    """What `analyze` made of its inputs: one report per job found among the traces (one, for
    a single trace, a job's ranks or a run folder), and the files it could not read."""

    reports: tuple[Report, ...]
    skipped: tuple[SkippedTrace, ...] = ()
    apart: tuple[str, ...] = ()
    """Why the traces were not read as one job (`analysis.jobs`), when there are several."""
