"""`exporters.tensorboard` on run folders written record by record, read back by TensorBoard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS,
    TENSORS,
    EventAccumulator,
)

from tests.fake_run import FakeRun
from torchtop.assess.tracker import DEFAULT_HOLD
from torchtop.diagnosis.rules import load_rules
from torchtop.exporters.tb_events import crc32c, masked_crc
from torchtop.exporters.tensorboard import TensorBoardLog
from torchtop.live.watch import LiveMonitor
from torchtop.runs.journal import JournalWriter
from torchtop.runs.records import GpuDevice, GpuSample


def read(folder: Path) -> EventAccumulator:
    reader = EventAccumulator(str(folder), size_guidance={SCALARS: 0, TENSORS: 0})
    reader.Reload()
    return reader


def texts(reader: EventAccumulator, tag: str) -> list[tuple[int, str]]:
    return [(e.step, e.tensor_proto.string_val[0].decode()) for e in reader.Tensors(tag)]


def board_of(fake_run: FakeRun) -> tuple[TensorBoardLog, LiveMonitor]:
    log = TensorBoardLog(fake_run.layout.root / "tensorboard", fake_run.layout.root)
    monitor = LiveMonitor(fake_run.layout.root, load_rules(None), on_tick=log.publish)
    return log, monitor


def test_the_checksum_is_crc32c_as_tfrecord_masks_it() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the standard check value of CRC-32C
    assert crc32c(b"") == 0
    assert masked_crc(b"") == 0xA282EAD8


def test_each_steps_wall_and_wait_is_written_at_its_step_and_read_back_exactly(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 12, wall_s=0.25, data_wait_s=0.125)
    log, monitor = board_of(fake_run)
    snapshot = monitor.tick()
    rank = read(fake_run.layout.root / "tensorboard" / "rank0")
    walls = rank.Scalars("step/wall_ms")
    assert [(e.step, e.value) for e in walls] == [(i, 250.0) for i in range(12)]
    waits = rank.Scalars("step/dataloader_wait_ms")
    assert [e.value for e in waits] == [125.0] * 12
    assert [e.wall_time for e in walls] == [s.t for s in snapshot.state.training_processes[0].steps]
    report = snapshot.report
    (rate,) = rank.Scalars("steps_per_s")
    assert (rate.step, rate.value) == (11, pytest.approx(report.job.metrics["steps_per_s"]))
    (wait,) = rank.Scalars("dataloader_wait_share")
    assert wait.value == pytest.approx(report.job.metrics["dataloader_share"])
    # No new step, no second point at the same step; new steps go on from where they were.
    monitor.tick()
    fake_run.steps(100, 3, wall_s=0.5, data_wait_s=0.0, first=12)
    monitor.tick()
    log.close()
    rank = read(fake_run.layout.root / "tensorboard" / "rank0")
    assert [e.step for e in rank.Scalars("step/wall_ms")] == list(range(15))
    assert [e.step for e in rank.Scalars("steps_per_s")] == [11, 14]


def test_a_relaunched_rank_counts_from_zero_again_and_its_curve_goes_on_forward(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100, rank=0)
    fake_run.steps(100, 10, wall_s=0.1, data_wait_s=0.0)
    log, monitor = board_of(fake_run)
    monitor.tick()
    fake_run.hello(200, rank=0)  # the same rank after a relaunch: a new process from step 0
    fake_run.steps(200, 5, wall_s=0.2, data_wait_s=0.0)
    monitor.tick()
    log.close()
    walls = read(fake_run.layout.root / "tensorboard" / "rank0").Scalars("step/wall_ms")
    assert [e.step for e in walls] == list(range(15))
    assert [e.value for e in walls][-5:] == [pytest.approx(200.0)] * 5


def test_gpus_trials_and_each_change_of_verdict_go_to_the_job_run(fake_run: FakeRun) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 3, wall_s=0.2, data_wait_s=0.15)
    full = GpuDevice(index=0, utilization_gpu_pct=37, memory_used_bytes=2e9, power_w=180.5)
    with JournalWriter(fake_run.layout.samples("gpu")) as gpu:
        gpu.write(GpuSample(t=fake_run.t, devices=[full, GpuDevice(index=1, temperature_c=40)]))
    log, monitor = board_of(fake_run)
    monitor.tick()
    fake_run.steps(100, 20, wall_s=0.2, data_wait_s=0.15, first=3)
    trial = {
        "number": 1,
        "baseline_steps_per_s": 5.0,
        "trial_steps_per_s": 12.5,
        "speedup": 2.5,
        "kept": True,
        "reason": "faster in every round",
        "changes": ["dataloader.num_workers: 0 -> 4"],
    }
    fake_run.layout.trials_dir.mkdir()
    (fake_run.layout.trials_dir / "01.json").write_text(json.dumps(trial))
    for _ in range(DEFAULT_HOLD):  # the verdict shown changes once held this many ticks
        snapshot = monitor.tick()
    log.close()
    job = read(fake_run.layout.root / "tensorboard" / "job")
    scalars = set(job.Tags()["scalars"])
    assert {"gpu0/utilization_pct", "gpu0/memory_used_bytes", "gpu0/power_w"} <= scalars
    assert not any(tag.startswith("gpu1/") for tag in scalars), "not measured: not written"
    assert job.Scalars("gpu0/power_w")[0].value == pytest.approx(180.5)
    for key in ("baseline_steps_per_s", "trial_steps_per_s", "speedup"):
        (point,) = job.Scalars(f"trial/{key}")
        assert (point.step, point.value) == (1, pytest.approx(trial[key]))
    ((step, text),) = texts(job, "trial")
    assert step == 1 and "dataloader.num_workers: 0 -> 4" in text and "kept" in text
    verdicts = texts(job, "verdict")
    assert [step for step, _ in verdicts] == [2, 22]  # not enough steps yet, then the verdict
    assert verdicts[-1][1].startswith(f"**{snapshot.shown.bottleneck}**")
    assert snapshot.shown.bottleneck == "dataloader"


def test_a_folder_that_cannot_be_written_costs_the_tick_nothing(fake_run: FakeRun) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 3, wall_s=0.2, data_wait_s=0.0)
    blocked = fake_run.layout.root / "blocked"
    blocked.write_text("a file where the folder would be")
    log = TensorBoardLog(blocked, fake_run.layout.root)
    snapshot = LiveMonitor(fake_run.layout.root, load_rules(None), on_tick=log.publish).tick()
    assert log.failures == 1 and snapshot.state.training_processes


def test_steps_written_after_the_last_tick_reach_the_event_files_when_the_monitor_finishes(
    fake_run: FakeRun,
) -> None:
    fake_run.hello(100)
    fake_run.steps(100, 4, wall_s=0.25, data_wait_s=0.0)
    log, monitor = board_of(fake_run)
    monitor.tick()
    fake_run.steps(100, 3, wall_s=0.5, data_wait_s=0.0, first=4)  # the job's last steps
    monitor.finish()  # no tick between: the final report alone saw them
    log.close()
    assert len(monitor.watcher.state.training_processes[0].steps) == 7
    walls = read(fake_run.layout.root / "tensorboard" / "rank0").Scalars("step/wall_ms")
    assert [(e.step, e.value) for e in walls] == [(i, 250.0) for i in range(4)] + [
        (i, 500.0) for i in range(4, 7)
    ]
