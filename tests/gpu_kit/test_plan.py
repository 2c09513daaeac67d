"""The kit's plan: every planted truth names a real rule and fix, and the deadline is kept."""

from __future__ import annotations

import tomllib

import pytest
from kit_plan import JOBS, STEPS, selected
from run_kit import fit

from tests.conftest import RULES_DIR


@pytest.mark.parametrize("name", sorted(JOBS))
def test_each_planted_rule_exists_and_offers_the_fixes_the_kit_expects(name: str) -> None:
    job = JOBS[name]
    if job.rule is None:  # an efficiency truth: no rule is planted
        assert job.efficiency is not None
        return
    rule = tomllib.loads((RULES_DIR / f"{job.rule}.toml").read_text())
    assert rule["id"] == job.rule
    knobs = {fix["knob"] for fix in rule.get("fixes", [])}
    assert set(job.fix_knobs) <= knobs
    if job.bottleneck is not None:
        classes = {tomllib.loads(p.read_text()).get("class") for p in RULES_DIR.glob("*.toml")}
        assert job.bottleneck in classes


def test_every_step_watches_a_planted_job_and_the_gpu_plan_fits_eight_minutes() -> None:
    assert all(step.job in JOBS for step in STEPS)
    assert len({step.key for step in STEPS}) == len(STEPS)
    # watched seconds plus ~10 s of start-up and report per step, within the default budget
    assert sum(step.seconds for step in STEPS) + len(STEPS) * 10 <= 450


def test_only_selects_steps_by_key_or_kind_in_the_kits_order() -> None:
    keys = [s.key for s in selected("attach,run:fp32-matmul")]
    assert keys == ["run:fp32-matmul", "attach:input-bound", "attach:launch-bound"]
    assert selected(None) == STEPS
    with pytest.raises(ValueError, match="unknown step 'run:nope'"):
        selected("run:nope")


def test_a_step_is_shortened_to_fit_the_deadline_or_skipped() -> None:
    step = STEPS[0]
    assert fit(step, dry=False, left_s=500.0) == step.seconds
    assert fit(step, dry=False, left_s=20.0 + step.seconds * 0.75) == pytest.approx(
        step.seconds * 0.75
    )
    assert fit(step, dry=False, left_s=20.0 + step.seconds * 0.25) is None
