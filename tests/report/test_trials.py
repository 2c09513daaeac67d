"""The report's `trials` (CONTRACT.md): only when a fix was tried, the contract's keys first,
and a short section in the text report. The trials are real `Trial` values, as `tune` and the
dashboard's apply key write them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from torchtop.advice.plan import initial_plan
from torchtop.model.plan import AppliedFix
from torchtop.model.report import Report
from torchtop.model.trial_entry import Reverted, SinceRelaunch
from torchtop.model.trials import Trial
from torchtop.report import render_text, report_to_json
from torchtop.sessions.offline import analyze_paths
from torchtop.trials.decision import TrialSettings, decide
from torchtop.trials.measure import Measurement
from torchtop.trials.trial import trial_entry

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
CONTRACT_KEYS = ["fixes", "baseline_steps_per_s", "trial_steps_per_s", "speedup", "kept"]


@pytest.fixture(scope="module")
def report() -> Report:
    return analyze_paths([str(SAMPLES / "dataloader_starved")])


def trial(kept: bool, before_s: float, after_s: float) -> Trial:
    plan = initial_plan(["python", "train.py"], {}, "/work")
    fix = AppliedFix("dataloader.num_workers", 2, "arg", "Load batches in 2 worker processes.")
    after = replace(plan, command=(*plan.command, "--num-workers", "2"), fixes=(fix,),
                    changes=("option --num-workers: 0 -> 2",))  # fmt: skip
    # Three rounds, the "after" runs 2% apart as real runs are: the rounds' ratios and interval
    # come from the runs as `run_trial` makes them.
    befores = tuple(Measurement(Path(f"b{k}"), (before_s,) * 10, 3) for k in range(3))
    afters = tuple(Measurement(Path(f"a{k}"), (after_s * m,) * 10, 3) for k, m in SPREAD)
    ratios = [a.steps_per_s / b.steps_per_s for b, a in zip(befores, afters, strict=True)]
    decision = decide(ratios, TrialSettings(), final=True)
    assert decision is not None
    return Trial(
        number=1,
        fixes=(fix,),
        kept=kept,
        reason=decision.reason,
        before=befores,
        after=afters,
        p_value=decision.estimate.p_value,
        plan_before=plan,
        plan_after=after,
        duration_s=12.0,
        estimate=decision.estimate,
        effect=decision.effect,
    )


SPREAD = ((0, 1.0), (1, 0.98), (2, 1.02))


def test_a_report_without_trials_has_no_trials_key(report: Report) -> None:
    assert "trials" not in report_to_json(report)
    assert "TRIALS" not in render_text(report)


def test_each_trial_has_the_contracts_keys_first_then_its_evidence(report: Report) -> None:
    tried = msgspec.structs.replace(
        report, trials=(trial_entry(trial(True, 0.2, 0.1), with_steps=False),)
    )
    (entry,) = report_to_json(tried)["trials"]
    assert list(entry)[:5] == CONTRACT_KEYS
    assert entry["fixes"] == [
        {"knob": "dataloader.num_workers", "value": 2, "apply": "arg",
         "description": "Load batches in 2 worker processes."}
    ]  # fmt: skip
    assert entry["baseline_steps_per_s"] == 5.0 and entry["trial_steps_per_s"] == 10.0
    assert entry["speedup"] == pytest.approx(2.0, abs=1e-3) and entry["kept"] is True
    assert entry["effect"] == "faster" and entry["rounds"] == 3
    assert entry["round_ratios"] == pytest.approx([2.0, 2.0408, 1.9608], abs=1e-4)
    assert entry["command_after"] == ["python", "train.py", "--num-workers", "2"]


def test_the_text_report_lists_each_trial_with_its_rates_and_outcome(report: Report) -> None:
    trials = (trial(True, 0.2, 0.1), trial(False, 0.2, 0.2))
    tried = msgspec.structs.replace(
        report, trials=tuple(trial_entry(t, with_steps=False) for t in trials)
    )
    text = render_text(tried)
    section = text[text.index("TRIALS") :].splitlines()
    interval = "99% interval 1.78-2.24x"
    assert section[1:5] == [
        "  1  dataloader.num_workers = 2 [arg]  5.00 -> 10.00 steps/s  "
        f"measured 2.00x ({interval}, 3 rounds)  faster: kept",
        f"     faster beyond noise: 2.00x, {interval} over 3 rounds (2.00x, 2.04x, 1.96x)",
        "  1  dataloader.num_workers = 2 [arg]  5.00 -> 5.00 steps/s  "
        "measured 1.00x (99% interval 0.89-1.12x, 3 rounds)  inconclusive: reverted",
        "     inconclusive: 1.00x, 99% interval 0.89-1.12x over 3 rounds (1.00x, 1.02x, 0.98x): "
        "1 of 3 rounds favoured the fix, but its interval spans 1.02x, the least gain a kept fix "
        "shows; about 8 more rounds would decide it at this spread; reverted",
    ]


def test_the_text_report_holds_each_kept_fix_against_its_relaunch(report: Report) -> None:
    """What the relaunched job did since (`since_relaunch`) and a revert, under the trial."""
    holding = SinceRelaunch(412, 40.0, 9.8, 1.96, True, "x", 30, 9.8, 0.5, 0.15, "T0")
    why = "no longer holds: the last 30 steps ran at 6.10"
    short = msgspec.structs.replace(holding, steps_per_s=6.1, speedup=1.22, holds=False, reason=why)
    entry = trial_entry(trial(True, 0.2, 0.1), with_steps=False)
    back = Reverted(at="T", run_dir="RUN/jobs/02", from_run_dir="RUN/jobs/01")
    entries = (
        msgspec.structs.replace(entry, since_relaunch=holding),
        msgspec.structs.replace(entry, since_relaunch=short),
        msgspec.structs.replace(entry, since_relaunch=short, reverted=back),
    )
    text = render_text(msgspec.structs.replace(report, trials=entries))
    section = text[text.index("TRIALS") :].splitlines()
    said = "     trial said 2.00x, since relaunch"
    assert section[3] == f"{said} 1.96x (9.80 steps/s over 412 steps): holds"
    assert section[6:9] == [
        f"{said} 1.22x (6.10 steps/s over 412 steps): no longer holds",
        f"     {why}",
        "     not reverted: the job ran on with the fix",
    ]
    assert section[-1] == "     reverted by you at T: RUN/jobs/02"
