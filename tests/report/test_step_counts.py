"""The report's `steps` says what it counted: timed steps, or stack samples that are not steps.

Attach without an agent samples where the training thread is: its `count` is null in every
rendering, its samples are named as samples, and the verdict still comes from them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CONTEXT
from tests.tui.replay import LOADER_STACKS
from torchtop.assess.attached import assess_attached
from torchtop.diagnosis.rules import load_rules
from torchtop.report import render_markdown, render_text, report_to_json
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import RunRecord, StackProcess, StacksSample, StackThread
from torchtop.runs.state import load_run
from torchtop.sessions.offline import analyze_paths

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def attached_run(root: Path, samples: int) -> RunLayout:
    """A folder as attach records it: no agent, py-spy samples of a loop in `__next__`."""
    layout = RunLayout(root)
    layout.create()
    write_record(layout.run_json, RunRecord(kind="attach", command=["python", "t.py"], pid=4242))
    writer = JournalWriter(layout.samples("stacks"))
    for second in range(samples):
        main = StackThread(tid=4242, name="MainThread", active=True, frames=list(LOADER_STACKS[0]))
        processes = [StackProcess(pid=4242, role="main", threads=[main])]
        writer.write(StacksSample(t=float(second), processes=processes))
    writer.close()
    return layout


def test_attach_without_an_agent_reports_a_null_step_count_and_names_its_samples(
    tmp_path: Path,
) -> None:
    layout = attached_run(tmp_path / "run", samples=12)
    report = assess_attached(load_run(layout.root), {}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "dataloader", "samples still give a verdict"
    steps = report_to_json(report)["steps"]
    assert steps["count"] is None and steps["steps_per_s"] is None and steps["mean_ms"] is None
    assert steps["stack_samples"] == 12
    assert "(12 stack samples)" in render_text(report)
    assert "shares of 12 stack samples" in render_markdown(report)
    assert "over None steps" not in render_markdown(report)


def test_a_trace_counts_its_steps_and_its_breakdown_covers_them_all() -> None:
    report = analyze_paths([str(SAMPLES / "dataloader_starved")])
    steps = report_to_json(report)["steps"]
    assert steps["count"] == len(steps["per_step"]) == steps["breakdown_steps"]
    assert steps["steps_per_s"] == pytest.approx(1000.0 / steps["mean_ms"], rel=1e-4)
    assert "stack_samples" not in steps
