"""A run folder read as its session: quit right after a revert, the job as it now runs has 4
steps, too few for a verdict, while the job was watched with the same settings for a minute
before the trial. The report (`analyze`/`view` of the folder, and the live session's own, which
goes through the same `with_session_verdict`) gives the session's verdict, the trial and its
revert. The folder is written record by record (`FakeRun`), once for the module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from tests.fake_run import FakeRun
from tests.report.test_trials import trial
from torchtop.diagnosis.rules import load_rules
from torchtop.model.report import JobReports, Report
from torchtop.model.trial_entry import FixEntry, entry_json
from torchtop.report.jobs import render_jobs_text
from torchtop.report.text import render_text
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Revert, RunRecord
from torchtop.sessions.offline import analyze_jobs
from torchtop.trials.trial import trial_entry

COMMAND = ["python", "train.py"]
WORKERS = FixEntry("dataloader.num_workers", 2, "arg", "Load batches in 2 worker processes.")


def segment(root: Path, started_at: float, steps: int, fixes: list[FixEntry]) -> None:
    """A job started again by the dashboard: its own run.json (command and fixes), its steps."""
    run = FakeRun(root)
    run.layout.run_json.unlink()
    command = [*COMMAND, "--num-workers", "2"] if fixes else COMMAND
    write_record(
        run.layout.run_json,
        RunRecord(kind="demo", command=command, pid=200, started_at=started_at, fixes=fixes),
    )
    run.hello(200)
    run.steps(200, steps, wall_s=0.05 if fixes else 0.1, data_wait_s=0.0 if fixes else 0.08)


@pytest.fixture(scope="module")
def reverted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo: a minute starved, a kept workers trial, its job, then reverted: 4 steps since."""
    root = tmp_path_factory.mktemp("session") / "run"
    first = FakeRun(root)
    first.hello(100)
    first.steps(100, 600, wall_s=0.1, data_wait_s=0.08)
    layout = RunLayout(root)
    layout.trials_dir.mkdir()
    entry = trial_entry(trial(True, 0.1, 0.05), with_steps=False)
    layout.trial_json(1).write_text(json.dumps(entry_json(entry)))
    segment(layout.job_dir(1), 1_700_000_100.0, 400, [WORKERS])
    segment(layout.job_dir(2), 1_700_000_200.0, 4, [])
    with JournalWriter(layout.reverts) as writer:
        writer.write(
            Revert(t=1_700_000_200.0, at="2026-11-29T12:00:00+00:00", trial=1, fixes=[WORKERS],
                   from_run_dir=str(layout.job_dir(1)), run_dir=str(layout.job_dir(2)),
                   command=COMMAND)
        )  # fmt: skip
    return root


@pytest.fixture(scope="module")
def report(reverted: Path) -> Report:
    jobs, state = analyze_jobs([str(reverted)], load_rules(RULES_DIR))
    assert state is not None and state.layout.root == RunLayout(reverted).job_dir(2)
    return jobs.reports[0]


def test_the_session_verdict_comes_from_the_folder_that_ran_the_same_settings(
    report: Report,
) -> None:
    """Not "VERDICT UNKNOWN / 4 of the 5 steps needed / FINDINGS none": RUN ran the job as it
    now runs (no fix) for 600 steps; jobs/01, with the fix, measured another job."""
    assert report.verdict.bottleneck == "dataloader"
    assert report.verdict.findings
    assert report.job.metrics.get("steps_count") != 4
    (note,) = [n for n in report.notes if n.startswith("verdict from ")]
    assert note.startswith("verdict from RUN, which ran the job with the settings it runs")
    assert "(RUN/jobs/02) has none yet: " in note and "of the 5 steps needed" in note


def test_the_session_report_lists_the_trial_and_that_its_kept_fix_was_reverted(
    report: Report, reverted: Path
) -> None:
    (entry,) = report.trials
    assert entry.kept and entry.reverted is not None
    assert entry.reverted.run_dir == str(RunLayout(reverted).job_dir(2))
    text = render_text(report)
    assert "VERDICT  DATALOADER" in text and "UNKNOWN" not in text
    # `view` without a terminal prints what `analyze` does, not a table of "1 jobs".
    assert render_jobs_text(JobReports((report,))) == text
    assert "faster: kept" in text
    assert "reverted by you at 2026-11-29T12:00:00+00:00" in text
