"""How a failed job ended, in words: the text report's EXIT section and the headless summary.

A job that failed is said first, with the last lines it wrote to stderr (its traceback, or
Python's "can't open file ...") and the file that holds the rest, so the cause is on screen
without opening the log. A job that failed before its first step has no report to speak of:
its EXIT section is the whole report (`before_first_step`).
"""

from __future__ import annotations

from pathlib import Path

from torchtop.model.memory import OutOfMemory
from torchtop.model.report import JobExit, Report

TAIL_SHOWN = 12
"""The last lines of stderr the text shows (the JSON report keeps all of `exit.stderr_tail`)."""


def memory_line(found: OutOfMemory | None) -> list[str]:
    """`  out of memory on cuda:0; the last peak measured: 71.2 GiB (aten::mm holding 40 GiB)`."""
    if found is None:
        return []
    where = f" on {found.device}" if found.device else ""
    if found.last_peak_bytes is None:
        peak = "no peak was measured (profile with profile_memory=True to see who held it)"
    else:
        peak = f"the last peak measured: {found.last_peak_bytes / 2**30:.2f} GiB"
        if found.last_peak_of == "resident set":
            peak += " resident set"
        if found.top_allocators:
            top = found.top_allocators[0]
            peak += f" ({top.name} holding {top.alive_at_peak_bytes / 2**30:.2f} GiB of it)"
    return [f"  out of memory{where}; {peak}"]


def exit_lines(ending: JobExit | None, heading: str = "EXIT  ") -> list[str]:
    """`EXIT  the job crashed with exit status 1; its whole output is in RUN/job.log`, the
    stderr tail indented, and a blank line; for a job torchtop stopped, that line alone (what
    it wrote as it was stopped is no error of its own); nothing for a job that ended well or
    runs."""
    if ending is not None and ending.how == "stopped":
        return [f"{heading}{ending.headline()}", ""]
    if ending is None or not ending.failed:
        return []
    head = f"{heading}{ending.headline()}"
    if ending.log is not None:
        # Where stdout went to the terminal, the file holds its stderr alone.
        what = "stderr" if Path(ending.log).name == "stderr.log" else "whole output"
        head += f"; its {what} is in {ending.log}"
    said = [f"  {line}" for line in shown_tail(ending, TAIL_SHOWN)]
    return [head, *said, ""]


def shown_tail(ending: JobExit, lines: int) -> list[str]:
    """What to show of a failed job's stderr: the first failed rank's own error where its agent
    recorded one (the job's tail is then its launcher's summary), else the job's tail."""
    if ending.rank_error:
        said = f"rank {ending.rank} failed first ({ending.rank_ended}); its error:"
        return [said, *ending.rank_error[-(lines - 1) :]]
    tail = list(ending.stderr_tail[-lines:])
    if ending.rank is not None:
        tail.insert(0, f"rank {ending.rank} failed first ({ending.rank_ended}); the job's stderr:")
        tail = tail[: lines + 1]
    return tail or ["(it wrote nothing to stderr)"]


def before_first_step(report: Report) -> bool:
    """The job failed and no step of it was seen: it did not start, or died setting up."""
    if report.exit is None or not report.exit.failed:
        return False
    steps = report.job.metrics.get("steps_count")
    return not steps
