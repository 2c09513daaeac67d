"""Per-fix conditions (`when` in a rule's `[[fixes]]`): a fix is offered only where it fits.

Each shipped example that lists `offers` is checked through the engine, so an example that
names its machine (a V100, GNU OpenMP) says which fixes a user of that machine is shown.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from torchtop.diagnosis.describe import describe_rule
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleError, load_rules, offered_fixes
from torchtop.model.analysis import Metrics

SHIPPED = load_rules(RULES_DIR)
OFFERS = [
    pytest.param(rule_id, index, id=f"{rule_id}-{index}")
    for rule_id, rule in sorted(SHIPPED.rules.items())
    for index, example in enumerate(rule.examples)
    if example.offers is not None
]


@pytest.mark.parametrize(("rule_id", "index"), OFFERS)
def test_each_example_offers_exactly_the_fixes_it_lists(rule_id: str, index: int) -> None:
    rule = SHIPPED.rules[rule_id]
    example = rule.examples[index]
    offered = tuple(fix.knob for fix in offered_fixes(rule, example.metrics))
    assert offered == example.offers, example.note


def test_the_diagnosis_of_a_v100_finding_carries_no_tf32_and_no_bf16() -> None:
    metrics: Metrics = {
        "steps_count": 5,
        "has_step_markers": True,
        "has_gpu": True,
        "compute_capability": 7.0,
        "matrix_cores": True,
        "kernel_share": 0.9,
        "memcpy_share": 0.0,
        "memset_share": 0.0,
        "communication_share": 0.0,
        "runtime_share": 0.03,
        "dataloader_share": 0.0,
        "cpu_exec_share": 0.05,
        "other_share": 0.02,
        "gpu_utilization": 0.95,
        "tc_used_share": 0.0,
        "tc_eligible_share": 0.7,
    }
    verdict = diagnose(SHIPPED, metrics)
    finding = next(f for f in verdict.findings if f.rule == "tensor-cores-unused")
    assert [(fix.knob, fix.value) for fix in finding.fixes] == [("amp.dtype", "float16")]


def test_a_fix_condition_naming_an_unknown_metric_fails_the_load(tmp_path: Path) -> None:
    (tmp_path / "gpu.toml").write_text(
        textwrap.dedent(
            """
            id = "gpu"
            class = "gpu"
            title = "GPU"
            when = "kernel_share > 0.5"
            recoverable = "kernel_share"
            why = "x"

            [[fixes]]
            knob = "torch.float32_matmul_precision"
            value = "high"
            apply = "override"
            when = "compute_capabilty >= 8"
            """
        )
    )
    with pytest.raises(RuleError, match=r"gpu\.toml: fixes\[0\]\.when names unknown metric"):
        load_rules(tmp_path)


def test_torchtop_rules_shows_when_each_fix_is_offered() -> None:
    text = describe_rule(SHIPPED, "cpu-math-bound")
    assert "env.KMP_BLOCKTIME = 1  [env]" in text
    assert "(only when openmp_runtime == 'intel' or openmp_runtime == 'llvm')" in text


def test_no_applied_fix_states_a_number_its_resolved_value_could_contradict() -> None:
    """A fix's value is resolved for the job ("4 workers" may become 5), and the value is shown
    beside the description; a number written into the description would then disagree."""
    stated = {
        f"{rule.id}: {fix.knob}": fix.description
        for rule in SHIPPED.rules.values()
        for fix in rule.fixes
        if fix.apply != "code" and re.search(r"\b\d+(?:\.\d+)?\b", fix.description)
    }
    assert stated == {}
