"""`torchtop run --headless --tensorboard` on a real training job, read back by TensorBoard.

The job (`workloads/self_timed.py`) times itself and prints its own rate: the step walls written
for TensorBoard must add up to the time the job measured, and the rate written last must be
the report's. The event files are read while the job still runs (written as it goes, not at the
end) and with TensorBoard's own reader; the profiler windows with torch-tb-profiler's loader.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS,
    TENSORS,
    EventAccumulator,
)

from tests.conftest import WORKLOADS
from torchtop.traces.logdir import WORKER_PATTERN

JOB = WORKLOADS / "self_timed.py"
JOB_LINE = re.compile(r"job: (\d+) steps in ([\d.]+) s = ([\d.]+) steps/s")
WARMUP = 5
HEAVY = (
    "torch",
    "tensorflow",
    "google.protobuf",
    "tensorboard",
    "tensorboardX",
    "prometheus_client",
)
LAUNCHER = f"""
import json, sys
from torchtop.cli import main
status = main(sys.argv[1:])
heavy = sorted(name for name in {HEAVY!r} if name in sys.modules)
print("LAUNCHER IMPORTED " + json.dumps(heavy), file=sys.stderr)
sys.exit(status)
"""


def accumulator(folder: Path) -> EventAccumulator:
    """TensorBoard's reader, keeping every point (its default samples 1000 scalars per tag)."""
    reader = EventAccumulator(str(folder), size_guidance={SCALARS: 0, TENSORS: 0})
    reader.Reload()
    return reader


def texts(reader: EventAccumulator, tag: str) -> list[str]:
    return [e.tensor_proto.string_val[0].decode() for e in reader.Tensors(tag)]


def steps_written(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    reader = accumulator(folder)
    return len(reader.Scalars("step/wall_ms")) if "step/wall_ms" in reader.Tags()["scalars"] else 0


@pytest.mark.slow
def test_a_real_runs_event_files_grow_as_it_runs_and_agree_with_the_jobs_own_clock(
    tmp_path: Path,
) -> None:
    run_dir, board = tmp_path / "run", tmp_path / "run" / "tensorboard"
    command = [
        *(sys.executable, "-c", LAUNCHER, "run", "--headless", "--tensorboard"),
        *("--run-dir", str(run_dir), "--report", str(tmp_path / "report.json"), "--"),
        *(sys.executable, str(JOB), "--steps", "150", "--warmup", str(WARMUP)),
        *("--batch-size", "16", "--sample-sleep-ms", "3", "--width", "256"),
    ]
    env = {**os.environ, "TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "4"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    first_seen = 0  # the steps in the event files the first time any were there
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if not first_seen:
                first_seen = steps_written(board / "rank0")
            time.sleep(0.5)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr[-3000:]
    assert "LAUNCHER IMPORTED []" in stderr, stderr[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    rank = accumulator(board / "rank0")
    walls = rank.Scalars("step/wall_ms")
    assert 0 < first_seen < len(walls) / 2, "written as the job ran, not only at its end"
    # Every step the agent timed, numbered as the job counts them, on the x axis.
    steps = [e.step for e in walls]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert len(walls) >= report["steps"]["count"]
    job_line = JOB_LINE.search(stderr)  # the job's own stdout, on torchtop's stderr
    assert job_line is not None, stderr[-2000:]
    timed, job_s = int(job_line.group(1)), float(job_line.group(2))
    # The job's own clock ran from the end of its warm-up to its last step: the same steps.
    assert sum(e.value for e in walls[-timed:]) / 1000 == pytest.approx(job_s, rel=0.05)
    rate = rank.Scalars("steps_per_s")[-1]
    assert rate.value == pytest.approx(report["steps"]["steps_per_s"], rel=2e-3)
    assert rate.value == pytest.approx(float(job_line.group(3)), rel=0.10)
    for category, share in report["breakdown"].items():
        assert rank.Scalars(f"breakdown/{category}")[-1].value == pytest.approx(share, abs=1e-4)
    job = accumulator(board / "job")
    verdicts = texts(job, "verdict")
    assert verdicts[-1].startswith(f"**{report['bottleneck']}**")
    assert len(set(verdicts)) == len(verdicts), "a text for each change, not each tick"
    assert "gpu0/power_w" not in job.Tags()["scalars"], "no GPU here: nothing, never zeros"
    # torch-tb-profiler numbers each worker's spans from 1, in the order of their timestamps.
    windows = sorted((run_dir / "traces").glob("*.pt.trace.json.gz"))
    assert windows, "the job recorded a profiler window"
    spans: dict[str, int] = {}
    for path in windows:
        match = WORKER_PATTERN.match(path.name)
        assert match is not None
        spans[match.group(1)] = spans.get(match.group(1), 0) + 1
    expected = {
        (worker, str(span)) for worker, count in spans.items() for span in range(1, count + 1)
    }
    assert profiler_runs(board / "profiler") == expected


def profiler_runs(folder: Path) -> set[tuple[str, str]]:
    """torch-tb-profiler's own loader on the folder: the (worker, span) pairs it lists."""
    from torch_tb_profiler import io
    from torch_tb_profiler.profiler import RunLoader

    with tempfile.TemporaryDirectory() as cache:
        run = RunLoader(folder.name, str(folder), io.Cache(cache)).load()
        return {(p.worker, str(p.span)) for p in run.get_profiles() if p.worker is not None}


@pytest.mark.gpu
def test_each_gpu_reading_written_is_one_nvml_took_during_the_run(tmp_path: Path) -> None:
    from torchtop.collectors.nvml import NvmlCollector

    probe = NvmlCollector()
    reason = probe.start()
    probe.stop()
    if reason is not None:
        pytest.skip(f"NVML finds no device here: {reason}")
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "run", "--headless", "--tensorboard",
         "--run-dir", str(run_dir), "--", sys.executable, str(JOB), "--steps", "150",
         "--sample-sleep-ms", "3", "--width", "256"],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    samples = [json.loads(line) for line in (run_dir / "samples" / "gpu.jsonl").open()]
    taken: dict[str, set[float]] = {}
    for sample in samples:
        for device in sample.get("devices", []):
            for field in ("utilization_gpu_pct", "memory_used_bytes", "power_w"):
                if device.get(field) is not None:
                    tag = f"gpu{device['index']}/{field.replace('_gpu', '')}"
                    taken.setdefault(tag, set()).add(float(device[field]))
    assert taken, "NVML started but no reading was recorded"
    board = accumulator(run_dir / "tensorboard" / "job")
    for tag, values in taken.items():
        written = board.Scalars(tag)
        assert written, tag
        for point in written:  # float32 in the event: within its precision of a reading
            assert any(point.value == pytest.approx(v, rel=1e-6) for v in values), tag
