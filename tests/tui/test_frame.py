"""Frames: copies of what the panels need, built off the UI thread from snapshots or reports."""

from __future__ import annotations

from collections import deque
from pathlib import Path

from msgspec.structs import replace

from tests.tui.replay import Replay, SyntheticRun, dataloader_bound
from torchtop.model.report import Report
from torchtop.runs.records import Bye, Hello, Step
from torchtop.tui.frame import FrameBuilder, offline_frame, tail, trace_title
from torchtop.tui.widgets.header import JobHeader


def test_a_live_frame_carries_the_shown_verdict_samples_and_the_scripts_options(
    tmp_path: Path,
) -> None:
    source = Replay(SyntheticRun(tmp_path / "run", dataloader_bound()))
    builder = FrameBuilder()
    frames = [builder.build(source.tick()) for _ in range(4)]
    last = frames[-1]
    assert [f.verdict.bottleneck for f in frames] == ["unknown", "unknown", "dataloader",
                                                     "dataloader"]  # fmt: skip
    assert last.batch_size == 32 and last.samples_per_s is not None
    assert len(last.host) == 4 and last.gpu == ()
    assert last.unavailable["gpu"].startswith("NVML")
    assert [o.dest for o in last.cli_options] == ["batch_size", "num_workers", "pin_memory"]
    assert [p.elapsed_s for p in last.history] == [1.0, 2.0, 3.0, 4.0]
    assert last.fixes[0].fix.knob == "dataloader.num_workers"


def test_the_frame_keeps_its_samples_when_the_run_state_moves_on(tmp_path: Path) -> None:
    source = Replay(SyntheticRun(tmp_path / "run", dataloader_bound()))
    builder = FrameBuilder()
    first = builder.build(source.tick())
    builder.build(source.tick())
    assert len(first.host) == 1


def test_new_training_processes_mark_a_relaunch_in_the_history(tmp_path: Path) -> None:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())
    source = Replay(run)
    builder = FrameBuilder()
    assert builder.build(source.tick()).history[-1].marker == ""
    run.agent(4242).write(Bye(t=0.0, reason="exit"))
    run.agent(777).write(Hello(t=0.0, pid=777, rank=None))
    run.agent(777).write(Step(t=0.0, step=0, wall_s=0.1, data_wait_s=0.0))
    frame = builder.build(source.tick())
    assert frame.history[-1].marker == "relaunch"
    assert builder.build(source.tick()).history[-1].marker == ""


def test_tail_takes_the_newest_records_oldest_first() -> None:
    assert tail(deque(range(10)), 3) == (7, 8, 9)


def test_an_offline_frame_has_one_history_point_per_step(resnet_report: Report) -> None:
    frame = offline_frame(resnet_report)
    assert len(frame.history) == len(resnet_report.job.steps) == 6
    assert abs(sum(frame.history[0].shares.values()) - 1.0) < 0.01
    assert not frame.recorded and frame.steps_per_s is not None
    assert frame.job == "resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
    assert trace_title(resnet_report) == frame.job


def test_the_header_says_which_signal_marks_the_steps(tmp_path: Path) -> None:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())
    source = Replay(run)
    builder = FrameBuilder()
    builder.build(source.tick())
    settings = replace(dataloader_bound().settings, t=0.0, step_signal="backward")
    run.agent(4242).write(settings)
    frame = builder.build(source.tick())
    assert frame.step_signal == "backward"
    header = str(JobHeader().draw(frame, 120, 2))
    assert f"step {frame.step} by backward()" in header
