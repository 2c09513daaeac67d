"""Live assessment over run folders: the same rules as analyze, no guessing before evidence."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import CONTEXT, RULES_DIR
from tests.fake_run import FakeRun
from torchtop.analysis.summary import analyze_trace
from torchtop.assess.run import WARMUP_STEPS, assess, step_metrics
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.records import LoaderSettings
from torchtop.runs.state import RunWatcher, load_run
from torchtop.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


def test_a_run_waiting_on_its_dataloader_is_named_dataloader_from_step_timing_alone(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100, dataloader=LoaderSettings(num_workers=0, pin_memory=False, batch_size=32))
    fake_run.steps(100, 20, wall_s=0.10, data_wait_s=0.08)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "dataloader"
    assert report.job.metrics["dataloader_share"] == pytest.approx(0.8)
    rules = [f.rule for f in report.verdict.findings]
    assert "dataloader-single-process" in rules, (
        "num_workers=0 is known live, so the deeper rule fires"
    )
    assert report.job.breakdown["dataloader"] == pytest.approx(0.8)


def test_the_verdict_stays_unknown_until_enough_steps_are_seen(fake_run: FakeRun) -> None:
    needed = load_rules().settings.live_min_steps  # `_verdict.toml`'s, 5
    fake_run.hello(100)
    fake_run.steps(100, WARMUP_STEPS + needed - 1, wall_s=0.1, data_wait_s=0.09)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "unknown"
    assert "steps needed" in report.verdict.reason
    fake_run.steps(100, 1, wall_s=0.1, data_wait_s=0.09, first=WARMUP_STEPS + needed - 1)
    assert (
        assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT).verdict.bottleneck
        == "dataloader"
    )


def test_the_steps_a_live_verdict_waits_for_are_read_from_the_verdict_file(
    fake_run: FakeRun, tmp_path: Path
) -> None:
    folder = tmp_path / "rules"
    shutil.copytree(RULES_DIR, folder)
    settings = folder / "_verdict.toml"
    settings.write_text(settings.read_text().replace("live_min_steps = 5", "live_min_steps = 8"))
    tree = load_rules(folder)
    fake_run.hello(100)
    fake_run.steps(100, WARMUP_STEPS + 7, wall_s=0.1, data_wait_s=0.09)
    verdict = assess(load_run(fake_run.layout.root), {}, tree, context=CONTEXT).verdict
    assert (verdict.bottleneck, verdict.reason) == (
        "unknown",
        "7 of the 8 steps needed seen so far",
    )
    fake_run.steps(100, 1, wall_s=0.1, data_wait_s=0.09, first=WARMUP_STEPS + 7)
    assert (
        assess(load_run(fake_run.layout.root), {}, tree, context=CONTEXT).verdict.bottleneck
        == "dataloader"
    )


def test_without_a_profiler_window_a_busy_cpu_job_is_not_guessed(fake_run: FakeRun) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 20, wall_s=0.1, data_wait_s=0.001)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "unknown"
    assert any("not measured" in note for note in report.job.notes)


def test_a_profiler_window_supplies_the_breakdown_and_step_timing_the_step_times(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 20, wall_s=0.25, data_wait_s=0.001)
    window = analyze_trace(read_trace(next((SAMPLES / "copy_heavy").glob("*.json.gz"))))
    report = assess(load_run(fake_run.layout.root), {100: window}, load_rules(), context=CONTEXT)
    assert report.verdict.bottleneck == "memcpy"
    assert report.job.breakdown == window.breakdown
    assert report.job.metrics["step_mean_ms"] == pytest.approx(250.0)


def test_two_ranks_are_reported_each_with_the_slowest_named(fake_run: FakeRun) -> None:
    fake_run.hello(100, rank=0)
    fake_run.hello(101, rank=1)
    fake_run.steps(100, 20, wall_s=0.10, data_wait_s=0.07)
    fake_run.steps(101, 20, wall_s=0.20, data_wait_s=0.16)
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert [r.analysis.label for r in report.ranks] == ["rank 0", "rank 1"]
    assert report.job.metrics["slowest_rank"] == "rank 1"
    assert report.job.metrics["rank_step_spread"] == pytest.approx((0.2 - 0.1) / 0.15)


def test_a_watcher_reads_only_new_records_on_each_poll(fake_run: FakeRun) -> None:
    watcher = RunWatcher(fake_run.layout.root)
    fake_run.hello(100)
    fake_run.steps(100, 3, wall_s=0.1, data_wait_s=0.0)
    assert watcher.poll().processes[100].steps_seen == 3
    fake_run.steps(100, 2, wall_s=0.1, data_wait_s=0.0, first=3)
    assert watcher.poll().processes[100].steps_seen == 5


def test_a_crashed_writers_torn_record_is_skipped_and_noted(fake_run: FakeRun) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 10, wall_s=0.1, data_wait_s=0.09)
    with fake_run.layout.agent_events(100).open("ab") as handle:
        handle.write(b'{"kind":"step","t":1,"st')
    report = assess(load_run(fake_run.layout.root), {}, load_rules(), context=CONTEXT)
    assert report.job.metrics["steps_count"] == 10 - WARMUP_STEPS
    assert any("torn" in note for note in report.notes)


def test_step_metrics_leave_the_dataloader_share_unmeasured_when_waits_are_unknown() -> None:
    from torchtop.runs.state import StepRecord

    steps = [StepRecord(1, i, float(i), 0.1, None, None, None) for i in range(5)]
    metrics = step_metrics(steps)
    assert metrics["step_mean_ms"] == pytest.approx(100.0)
    assert "dataloader_share" not in metrics


def test_analyze_reads_a_recorded_run_folder_through_the_live_assessment(fake_run: FakeRun) -> None:
    from torchtop.sessions.offline import analyze_paths

    fake_run.hello(100, dataloader=LoaderSettings(num_workers=0))
    fake_run.steps(100, 20, wall_s=0.10, data_wait_s=0.08)
    report = analyze_paths([str(fake_run.layout.root)])
    assert report.source_kind == "run"
    assert report.verdict.bottleneck == "dataloader"
    assert report.command == ("python", "train.py")


def test_a_run_folder_without_agent_steps_falls_back_to_its_trace_windows(
    fake_run: FakeRun,
) -> None:
    import shutil

    from torchtop.sessions.offline import analyze_paths

    source = next((SAMPLES / "copy_heavy").glob("*.json.gz"))
    shutil.copy(source, fake_run.layout.traces_dir / source.name)
    report = analyze_paths([str(fake_run.layout.root)])
    assert report.source_kind == "trace"
    assert report.verdict.bottleneck == "memcpy"
