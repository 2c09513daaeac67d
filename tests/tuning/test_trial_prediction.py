"""A trial keeps its fix's predicted gain beside its measured speedup, and every place that shows
the trial (tune's summary, the report's JSON and text) shows both."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from torchtop.advice.plan import initial_plan
from torchtop.model.plan import AppliedFix
from torchtop.model.report import Report
from torchtop.model.rounds import FASTER
from torchtop.model.trials import Trial
from torchtop.report import render_text, report_to_json
from torchtop.sessions.offline import analyze_paths
from torchtop.trials.measure import Measurement
from torchtop.trials.stats import estimate_rounds
from torchtop.trials.trial import measured, predicted_gain, trial_entry
from torchtop.tuning.summary import render_summary
from torchtop.tuning.tune import TuneResult

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"


@pytest.fixture(scope="module")
def report() -> Report:
    return analyze_paths([str(SAMPLES / "dataloader_starved")])


def with_gains(report: Report, gains: list[float | None]) -> Report:
    findings = tuple(
        msgspec.structs.replace(f, predicted_gain=g)
        for f, g in zip(report.verdict.findings, gains, strict=False)
    )
    return msgspec.structs.replace(
        report, verdict=msgspec.structs.replace(report.verdict, findings=findings)
    )


def trial(gain: float | None) -> Trial:
    plan = initial_plan(["python", "train.py"], {}, "/work")
    fix = AppliedFix("dataloader.num_workers", 4, "arg", "Load batches in 4 worker processes.")
    after = replace(plan, command=(*plan.command, "--num-workers", "4"), fixes=(fix,))
    before = (Measurement(Path("b"), (0.2,) * 10, 8),)
    faster = (Measurement(Path("a"), (0.05,) * 10, 8),)
    rounds = estimate_rounds([3.9, 4.1, 4.0], confidence=0.99)
    return Trial(1, (fix,), True, "faster beyond noise: 4.00x", before, faster, 1e-6, plan, after,
                 30.0, predicted_gain=gain, estimate=rounds, effect=FASTER)  # fmt: skip


def test_the_trials_predicted_gain_is_that_of_the_first_finding_offering_its_knob(
    report: Report,
) -> None:
    knobs = [fix.knob for finding in report.verdict.findings for fix in finding.fixes]
    assert "dataloader.num_workers" in knobs
    gains: list[float | None] = [5.5 + i for i in range(len(report.verdict.findings))]
    first = next(
        i
        for i, f in enumerate(report.verdict.findings)
        if any(x.knob == "dataloader.num_workers" for x in f.fixes)
    )
    assert predicted_gain(with_gains(report, gains), "dataloader.num_workers") == gains[first]
    assert predicted_gain(with_gains(report, [None] * len(gains)), "dataloader.num_workers") is None
    assert predicted_gain(with_gains(report, gains), "no.such.knob") is None
    assert predicted_gain(None, "dataloader.num_workers") is None


def test_predicted_and_measured_stand_side_by_side_in_the_json_and_the_text(
    report: Report,
) -> None:
    tried = msgspec.structs.replace(report, trials=(trial_entry(trial(6.2), with_steps=False),))
    (entry,) = report_to_json(tried)["trials"]
    assert entry["predicted_gain"] == 6.2 and entry["speedup"] == pytest.approx(4.0, abs=0.001)
    text = render_text(tried)
    claim = "5.00 -> 20.00 steps/s  measured 4.00x (99% interval 3.47-4.62x, 3 rounds)"
    assert f"{claim}; predicted 6.20x  faster: kept" in text
    assert entry["round_ratios"] == [3.9, 4.1, 4.0] and entry["rounds"] == 3
    assert entry["speedup_low"] == pytest.approx(3.465, abs=0.001)
    assert entry["speedup_high"] == pytest.approx(4.615, abs=0.001)
    assert entry["confidence"] == 0.99 and entry["effect"] == "faster"


def test_a_trial_without_a_prediction_says_none_and_shows_only_its_measurement(
    report: Report,
) -> None:
    tried = msgspec.structs.replace(report, trials=(trial_entry(trial(None), with_steps=False),))
    (entry,) = report_to_json(tried)["trials"]
    assert entry["predicted_gain"] is None
    # The findings carry their own predictions; the trial's line has none.
    trials = render_text(tried).split("TRIALS", 1)[1]
    assert "predicted" not in trials


def test_tunes_summary_shows_each_trials_prediction_beside_its_measurement(
    tmp_path: Path,
) -> None:
    made = trial(6.2)
    baseline = measured(made.before[0])
    result = TuneResult(tmp_path, made.plan_before, made.plan_after, (made,), (), baseline,
                        None, "no untried fix applies")  # fmt: skip
    assert (
        "5.00 -> 20.00 steps/s, measured 4.00x (99% interval 3.47-4.62x, 3 rounds); predicted "
        "6.20x: faster: kept"
    ) in render_summary(result, None)
