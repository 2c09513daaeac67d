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
from torchtop.offline import analyze_paths
from torchtop.relaunch.measure import Measurement
from torchtop.relaunch.trial import trial_entry
from torchtop.report import render_text, report_to_json

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
    return Trial(
        number=1,
        fixes=(fix,),
        kept=kept,
        reason="faster beyond noise: 2.00x" if kept else "no difference beyond noise; reverted",
        before=(Measurement(Path("b"), (before_s,) * 10, 3),),
        after=(Measurement(Path("a"), (after_s,) * 10, 3),),
        p_value=0.001,
        plan_before=plan,
        plan_after=after,
        duration_s=12.0,
    )


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
    assert entry["speedup"] == 2.0 and entry["kept"] is True
    assert entry["command_after"] == ["python", "train.py", "--num-workers", "2"]


def test_the_text_report_lists_each_trial_with_its_rates_and_outcome(report: Report) -> None:
    trials = (trial(True, 0.2, 0.1), trial(False, 0.2, 0.2))
    tried = msgspec.structs.replace(
        report, trials=tuple(trial_entry(t, with_steps=False) for t in trials)
    )
    text = render_text(tried)
    section = text[text.index("TRIALS") :].splitlines()
    assert section[1:5] == [
        "  1  dataloader.num_workers = 2 [arg]  5.00 -> 10.00 steps/s  measured 2.00x  kept",
        "     faster beyond noise: 2.00x",
        "  1  dataloader.num_workers = 2 [arg]  5.00 -> 5.00 steps/s  measured 1.00x  reverted",
        "     no difference beyond noise; reverted",
    ]


def test_the_text_report_holds_each_kept_fix_against_its_relaunch(report: Report) -> None:
    """What the relaunched job did since (`since_relaunch`) and a revert, under the trial."""
    holding = SinceRelaunch(412, 40.0, 9.8, 1.96, True, "x", 30, 9.8, 0.5, 0.15, "T0")
    why = "falls short of the trial beyond noise: the last 30 steps ran at 6.10"
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
        f"{said} 1.22x (6.10 steps/s over 412 steps): FALLS SHORT",
        f"     {why}",
        "     not reverted: the job ran on with the fix",
    ]
    assert section[-1] == "     reverted by the user at T: RUN/jobs/02"
