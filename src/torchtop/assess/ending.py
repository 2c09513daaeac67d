"""How a launched job ended, from its run folder: the report's `exit` and the job's note.

The job's end is `exit.json`, written by torchtop when it reaped the job (its status as the
parent saw it, and the last lines of its stderr). Under a launcher (`torchrun`) that status is
the launcher's: a rank's failure makes it 1. So the note names the rank that failed first, by
the `bye` its parent wrote (`agent.children`), and so agrees with the ranks table; the report's
`exit` carries that rank's own error as its agent recorded it, since the job's stderr tail is
the launcher's summary ("ChildFailedError ... exitcode: 1"), not the rank's traceback.
"""

from __future__ import annotations

from msgspec.structs import replace

from torchtop.analysis.oom import out_of_memory
from torchtop.model.analysis import RankAnalysis
from torchtop.model.memory import OutOfMemory
from torchtop.model.report import JobExit
from torchtop.runs.records import Bye
from torchtop.runs.state import ProcessState, RunState

LAUNCHED = ("run", "demo", "tune")
"""The kinds of run whose job torchtop started, and so saw end."""


def job_exit(state: RunState, source_kind: str) -> JobExit | None:
    """The report's `exit`: None while the job runs, or where torchtop did not start it."""
    record = state.exit
    if record is None or source_kind not in LAUNCHED:
        return None
    tail = record.stderr_tail if isinstance(record.stderr_tail, list) else []
    ending = JobExit(
        how=record.how,
        status=record.exit_status,
        signal=record.signal,
        stderr_tail=tuple(tail),
        log=record.log if isinstance(record.log, str) else None,
        duration_s=record.duration_s if isinstance(record.duration_s, float | int) else None,
    )
    failed = first_failed(state)
    if failed is None or failed.bye is None or record.how == "stopped":
        return ending
    return replace(
        ending, rank=failed.rank, rank_ended=bye_words(failed.bye), rank_error=failed.error
    )


def died_of_memory(ending: JobExit | None, job: RankAnalysis) -> OutOfMemory | None:
    """The out-of-memory a failed job's stderr reports, with the last peak its windows saw."""
    if ending is None or not ending.failed:
        return None
    return out_of_memory("\n".join(ending.stderr_tail), job.memory)


def ending_note(state: RunState) -> str | None:
    """`the job crashed with exit status 1; rank 1 failed first: signal SIGABRT`."""
    record = state.exit
    if record is None:
        return None
    ending = f"the job {record.how}"
    if record.exit_status is not None:
        ending += f" with exit status {record.exit_status}"
    if record.signal:
        ending += f" ({record.signal})"
    failed = first_failed_rank(state)
    if failed is not None and record.how != "stopped":
        rank, said = failed
        ending += f"; rank {rank} failed first: {said}"
    return ending


def first_failed_rank(state: RunState) -> tuple[int, str] | None:
    """The rank whose process ended first otherwise than `exit 0` (by its `bye`), and how;
    None for a job of one rank (the job's own status says it) or where every rank ended well."""
    process = first_failed(state)
    if process is None or process.bye is None or process.rank is None:
        return None
    return process.rank, bye_words(process.bye)


def first_failed(state: RunState) -> ProcessState | None:
    """The process of `first_failed_rank`."""
    ranks = [p for p in state.training_processes if p.rank is not None]
    failed = [
        (p.bye.t, p.rank or 0, i)
        for i, p in enumerate(ranks)
        if p.bye is not None and bye_words(p.bye) != "exit 0"
    ]
    if len(ranks) < 2 or not failed:
        return None
    return ranks[min(failed)[2]]


def bye_words(bye: Bye) -> str:
    """`exit N` or `signal NAME`, as the ranks table says it (`assess.ranks.ended`)."""
    if isinstance(bye.signal, str):
        return f"signal {bye.signal}"
    if isinstance(bye.exit_code, int):
        return f"exit {bye.exit_code}"
    return "exit"  # a `bye` from before the agent recorded the status
