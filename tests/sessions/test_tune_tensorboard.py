"""`tune --tensorboard`: a real tune's trial, before and after, read back by TensorBoard."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from tensorboard.backend.event_processing.event_accumulator import (
    SCALARS,
    TENSORS,
    EventAccumulator,
)

from tests.sessions.conftest import TUNED, Tuned
from torchtop.cli import main
from torchtop.sessions import tune as session
from torchtop.sessions.tune import TuneCommand


@pytest.mark.slow
@TUNED
def test_tune_writes_each_trials_before_and_after_and_the_outcome_as_its_report_says(
    tuned_starved: Tuned,
) -> None:
    report_path, tmp_path = tuned_starved.report, tuned_starved.run_dir.parent
    report = json.loads(report_path.read_text())
    (trial,) = report["trials"]
    board = EventAccumulator(
        str(tmp_path / "run" / "tensorboard" / "job"), size_guidance={SCALARS: 0, TENSORS: 0}
    )
    board.Reload()
    for key in ("baseline_steps_per_s", "trial_steps_per_s", "speedup"):
        (point,) = board.Scalars(f"trial/{key}")
        assert (point.step, point.value) == (1, pytest.approx(trial[key], rel=1e-6))
    (text,) = [e.tensor_proto.string_val[0].decode() for e in board.Tensors("trial")]
    assert text.startswith("trial 1: ") and ("kept" if trial["kept"] else "reverted") in text
    (final,) = board.Scalars("tune/final_steps_per_s")
    # Kept: the fix's measured rate; else tune's own baseline (a trial pools several before
    # runs of its rounds, so its baseline is not the tune's first measurement).
    kept_rate = (
        trial["trial_steps_per_s"] if trial["kept"] else report["tune"]["baseline_steps_per_s"]
    )
    assert final.value == pytest.approx(kept_rate, rel=1e-4)
    assert final.value == pytest.approx(report["tune"]["final_steps_per_s"], rel=1e-4)
    (verdict,) = [e.tensor_proto.string_val[0].decode() for e in board.Tensors("verdict")]
    assert verdict.startswith("**")


def test_the_bare_flag_is_the_run_folders_place_and_a_dir_is_taken_as_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[TuneCommand] = []

    def record(command: Sequence[str], options: TuneCommand, tree: object) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(session, "tune_session", record)
    assert main(["tune", "--tensorboard", "--", "python", "train.py"]) == 0
    assert main(["tune", "--tensorboard", "tb", "--", "python", "train.py"]) == 0
    assert main(["tune", "--", "python", "train.py"]) == 0
    assert [options.tensorboard for options in seen] == ["", "tb", None]
