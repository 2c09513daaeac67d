"""A failed job of several ranks, in words (`report.ending`): the first failed rank's own error
in place of its launcher's summary, or the job's tail under a line naming that rank."""

from __future__ import annotations

from torchtop.model.report import JobExit
from torchtop.report.contract import exit_json
from torchtop.report.ending import exit_lines

TORCHRUN_TAIL = ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "  rank: 1")
RAISED = ("Traceback (most recent call last):", "AssertionError: planted failure")


def test_the_first_failed_rank_s_own_error_is_shown_in_place_of_torchrun_s_summary() -> None:
    ending = JobExit("crashed", 1, None, TORCHRUN_TAIL, "RUN/job.log", 1, "exit 1", RAISED)
    lines = exit_lines(ending)
    assert lines[1:4] == [
        "  rank 1 failed first (exit 1); its error:",
        "  Traceback (most recent call last):",
        "  AssertionError: planted failure",
    ]
    assert exit_json(ending)["rank"] == {"rank": 1, "ended": "exit 1", "error": list(RAISED)}


def test_a_rank_that_raised_nothing_is_named_above_the_job_s_tail() -> None:
    ending = JobExit("crashed", 1, None, TORCHRUN_TAIL, None, 0, "signal SIGKILL")
    assert exit_lines(ending)[1:] == [
        "  rank 0 failed first (signal SIGKILL); the job's stderr:",
        *(f"  {line}" for line in TORCHRUN_TAIL),
        "",
    ]


def test_a_job_of_one_process_shows_its_own_tail_and_no_rank() -> None:
    ending = JobExit("crashed", 1, None, RAISED)
    assert exit_lines(ending)[1:] == [*(f"  {line}" for line in RAISED), ""]
    assert exit_json(ending)["rank"] is None
