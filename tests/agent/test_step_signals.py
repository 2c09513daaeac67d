"""Real tiny loops under the agent: every kind of loop has its steps found, counted once, and
the signal that marked them named in the `settings` record."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.running import Finished, run_job

pytestmark = pytest.mark.slow


def run_loop(tmp_path: Path, mode: str, *args: str) -> Finished:
    job = run_job(tmp_path / "run", "hand_loops", mode, *args)
    assert job.returncode == 0, job.stderr
    return job


def timed_steps(job: Finished) -> list[int]:
    return [s["step"] for s in job.records("step")]


def test_a_hand_written_sgd_loop_is_timed_by_its_backward_calls(tmp_path: Path) -> None:
    job = run_loop(tmp_path, "sgd", "--steps", "25")
    assert job.stdout == "steps 25\n"
    assert timed_steps(job) == list(range(25))
    walls = [s["wall_s"] for s in job.records("step")[1:]]
    # Each step sleeps 10 ms besides its math: a step is one backward, not a fraction of one.
    assert all(w >= 0.009 for w in walls), walls
    assert job.last_settings()["step_signal"] == "backward"


def test_backward_called_inside_backward_by_checkpointing_ends_one_step(tmp_path: Path) -> None:
    job = run_loop(tmp_path, "checkpoint", "--steps", "15")
    assert timed_steps(job) == list(range(15))
    assert job.last_settings()["step_signal"] == "backward"


def test_gradient_accumulation_counts_optimizer_steps_not_backward_calls(tmp_path: Path) -> None:
    job = run_loop(tmp_path, "accumulate", "--steps", "12", "--accumulate", "4")
    assert job.stdout == "steps 12\n"
    assert timed_steps(job) == list(range(12))
    assert job.last_settings()["step_signal"] == "optimizer"
    # The first batch, then the first backward() calls, were held, and said so, before the
    # optimizer stepped.
    held = [r["step_signal_held"] for r in job.records("settings")]
    assert held[:2] == ["dataloader", "backward"]
    assert job.last_settings()["step_signal_held"] is None
    waits = [s["data_wait_s"] for s in job.records("step")]
    assert all(w is not None and w >= 0 for w in waits)


def test_a_loop_with_only_dataloader_batches_is_timed_by_its_batches(tmp_path: Path) -> None:
    job = run_loop(tmp_path, "loader", "--steps", "20")
    assert timed_steps(job) == list(range(20))
    assert job.last_settings()["step_signal"] == "dataloader"
    assert job.last_settings()["dataloader"]["batch_size"] == 16


def test_torchtop_step_wins_over_every_other_signal(tmp_path: Path) -> None:
    job = run_loop(tmp_path, "explicit", "--steps", "20")
    assert timed_steps(job) == list(range(20))
    assert job.last_settings()["step_signal"] == "explicit"


def test_a_loop_with_no_signal_records_no_step_and_names_no_signal(tmp_path: Path) -> None:
    job = run_loop(tmp_path, "none", "--seconds", "1")
    assert job.records("step") == []
    assert job.records()[0]["kind"] == "hello"
    assert all(r.get("step_signal") is None for r in job.records("settings"))
