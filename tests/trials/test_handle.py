"""Cancelling a trial through its handle: the run being measured is the job the handle holds,
signalled as a process group; a run registered after the cancel is stopped as it registers; a
cancelled trial starts nothing more and writes no `NN.json`; and `run_trial` says what it
measured as typed events. Real processes throughout (`sleep` in a group of its own, the demo's
training job)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from torchtop.advice.plan import initial_plan
from torchtop.model.trials import Decided, Measured, TrialEvent
from torchtop.trials import handle as handle_module
from torchtop.trials.handle import TrialCancelled, TrialHandle
from torchtop.trials.trial import TrialSettings, run_trial

DEMO = [sys.executable, "-m", "torchtop.demo.train", "--batch-size", "8", "--latency-ms", "5"]
IGNORES_TERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"


def group_leader(*command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(command, start_new_session=True)


def ended_by(process: subprocess.Popen[bytes], within_s: float = 10.0) -> int:
    return process.wait(timeout=within_s)


def test_cancel_stops_the_job_the_handle_holds_with_sigterm() -> None:
    job = group_leader("sleep", "60")
    handle = TrialHandle()
    handle.measuring(job)
    handle.cancel()
    assert ended_by(job) == -signal.SIGTERM
    assert handle.cancelled


def test_a_job_registered_after_the_cancel_is_stopped_as_it_registers() -> None:
    handle = TrialHandle()
    handle.cancel()  # nothing measured yet: only the flag
    job = group_leader("sleep", "60")
    handle.measuring(job)
    assert ended_by(job) == -signal.SIGTERM


def test_a_job_that_ignores_sigterm_gets_sigkill_on_a_later_cancel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(handle_module, "KILL_AFTER_S", 0.2)
    job = group_leader(sys.executable, "-c", IGNORES_TERM)
    time.sleep(0.5)  # the job has set its handler
    handle = TrialHandle()
    handle.measuring(job)
    handle.cancel()
    with pytest.raises(subprocess.TimeoutExpired):
        job.wait(timeout=0.5)  # SIGTERM ignored
    handle.cancel()  # the sweep after KILL_AFTER_S
    assert ended_by(job) == -signal.SIGKILL


def test_a_run_no_longer_measured_is_not_signalled() -> None:
    job = group_leader("sleep", "60")
    try:
        handle = TrialHandle()
        handle.measuring(job)
        handle.measuring(None)
        handle.cancel()
        with pytest.raises(subprocess.TimeoutExpired):
            job.wait(timeout=0.5)
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()


def test_a_trial_whose_handle_was_cancelled_starts_nothing_and_is_recorded_as_cancelled(
    tmp_path: Path,
) -> None:
    plan = initial_plan(DEMO, os.environ, str(tmp_path))
    handle = TrialHandle()
    handle.cancel()
    with pytest.raises(TrialCancelled) as raised:
        run_trial(plan, plan, 5, 2, tmp_path / "run", 30.0, handle=handle)
    trials = tmp_path / "run" / "trials"
    assert not (trials / "01").exists() and not (trials / "01.json").exists()
    entry = json.loads((trials / "01-cancelled.json").read_text())
    assert entry["cancelled"] is True and entry["kept"] is False
    assert entry["baseline_steps_per_s"] is None and entry["trial_steps_per_s"] is None
    assert raised.value.trial is not None and raised.value.trial.cancelled


@pytest.mark.slow
def test_cancelling_mid_run_ends_the_trial_recorded_as_cancelled_and_no_process_left(
    tmp_path: Path,
) -> None:
    """The real demo job measured as a trial's baseline; cancelled once it runs."""
    plan = initial_plan(DEMO, os.environ, str(tmp_path))
    handle = TrialHandle()
    events: list[TrialEvent] = []
    ended: list[BaseException] = []

    def trial() -> None:
        try:
            run_trial(plan, plan, 2000, 2, tmp_path / "run", 60.0, on_event=events.append,
                      settings=TrialSettings(max_rounds=1), handle=handle)  # fmt: skip
        except BaseException as exc:  # the test reads what ended the trial
            ended.append(exc)

    worker = threading.Thread(target=trial)
    worker.start()
    run_json = tmp_path / "run" / "trials" / "01" / "before-1" / "run.json"
    deadline = time.monotonic() + 30
    while not run_json.is_file():
        assert time.monotonic() < deadline, "the baseline never started"
        time.sleep(0.1)
    time.sleep(1.0)
    while worker.is_alive() and time.monotonic() < deadline + 30:
        handle.cancel()
        worker.join(0.2)

    assert not worker.is_alive()
    assert [type(e) for e in ended] == [TrialCancelled]
    assert events == []  # no run was measured to its end
    assert not (tmp_path / "run" / "trials" / "01.json").exists()
    assert (tmp_path / "run" / "trials" / "01-cancelled.json").is_file()
    assert not (tmp_path / "run" / "trials" / "01" / "after-1").exists()
    assert (tmp_path / "run" / "trials" / "01" / "before-1" / "exit.json").is_file()


def test_a_measured_run_and_the_decision_are_typed_events_with_tunes_lines() -> None:
    event = Measured(3, "after-2", 12.3456)
    assert (event.label, event.steps_per_s) == ("after-2", 12.3456)
    assert event.text == "trial 3 after-2: 12.35 steps/s"  # tune's stderr line, word for word
    decided = Decided(3, False, "no difference beyond noise: 1.01x; reverted")
    assert decided.text == "trial 3: reverted: no difference beyond noise: 1.01x; reverted"
