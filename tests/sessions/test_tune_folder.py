"""`analyze`/`view` of a `tune` folder read the session, as they do a demo's run folder: the job
as tuned with tune's own verdict, every trial, and where the figures come from. They read one
trial's traces (`trials/01/after-1`) as a folder of traces, and said nothing of the baseline
or the trials. The shared real tune (`tuned_starved`) is read back."""

from __future__ import annotations

import json

import pytest

from tests.conftest import RULES_DIR
from tests.sessions.conftest import TUNED, Tuned
from torchtop.diagnosis.rules import load_rules
from torchtop.report.text import render_text
from torchtop.runs.layout import RunLayout
from torchtop.sessions.offline import analyze_jobs


@pytest.mark.slow
@TUNED
def test_a_tune_folder_reads_as_the_job_as_tuned_with_its_trials(tuned_starved: Tuned) -> None:
    run_dir = tuned_starved.run_dir
    tuned = json.loads(tuned_starved.report.read_text())
    jobs, state = analyze_jobs([str(run_dir)], load_rules(RULES_DIR))  # what `view` shows too
    (report,) = jobs.reports
    assert report.source_kind == "tune" and report.paths == (str(run_dir),)
    # The verdict tune itself gave of the job as tuned.
    assert report.verdict.bottleneck == tuned["bottleneck"]
    assert [(t.number, t.kept) for t in report.trials] == [
        (t["number"], t["kept"]) for t in tuned["trials"]
    ]
    kept = [t for t in report.trials if t.kept]
    shown = "RUN/trials/01/after-" if kept else "RUN/baseline;"
    (note,) = [n for n in report.notes if n.startswith("tune: the job as tuned (")]
    assert f"read from {shown}" in note and "the baseline in RUN/baseline" in note
    assert state is not None
    assert state.layout.root != RunLayout(run_dir).trial_dir(1) / "after-1" or kept
    text = render_text(report)
    assert text.startswith("torchtop tune · ") and "\nTRIALS\n" in text
