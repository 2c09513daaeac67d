"""Fixes in order of expected gain: the class's share of the step times the severity's weight."""

from __future__ import annotations

from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules
from torchtop.model.findings import Finding, Fix, Verdict
from torchtop.tui.ranking import rank_fixes, why_no_fix


def finding(rule: str, klass: str, severity: str, *fixes: Fix) -> Finding:
    return Finding(rule, klass, severity, rule, "", "", {}, fixes, (klass, rule))


WORKERS = Fix("dataloader.num_workers", 4, "override", "")
PIN = Fix("dataloader.pin_memory", True, "override", "")
AMP = Fix("amp.dtype", "bfloat16", "code", "")


def verdict(*findings: Finding) -> Verdict:
    scores = {"dataloader": 0.6, "gpu": 0.3, "memcpy": 0.05}
    return Verdict("dataloader", 0.8, scores, "", findings)


def test_fixes_come_highest_expected_gain_first() -> None:
    ranked = rank_fixes(
        verdict(
            finding("tensor-cores", "gpu", "high", AMP),
            finding("pageable", "memcpy", "medium", PIN),
            finding("starved", "dataloader", "low", WORKERS),
        )
    )
    assert [(r.fix.knob, round(r.gain, 3)) for r in ranked] == [
        ("amp.dtype", 0.3),
        ("dataloader.num_workers", 0.18),
        ("dataloader.pin_memory", 0.03),
    ]


def test_a_knob_offered_twice_is_listed_once_at_its_best_place() -> None:
    ranked = rank_fixes(
        verdict(
            finding("pageable", "memcpy", "medium", PIN),
            finding("starved", "dataloader", "high", WORKERS, PIN),
        )
    )
    assert [r.fix.knob for r in ranked] == ["dataloader.num_workers", "dataloader.pin_memory"]
    assert ranked[1].finding.rule == "starved"


def test_no_findings_means_no_fixes() -> None:
    assert rank_fixes(verdict()) == ()


def test_a_verdict_whose_findings_offer_no_fix_says_which_and_where_to_read_why() -> None:
    """The issue's attach: CPU, 20% recoverable, held by other processes on the cores."""
    tree = load_rules()
    contended = tree.rules["cpu-contention"].examples[0].metrics
    held = diagnose(tree, {**contended, "other_share": 0.2, "cpu_exec_share": 0.3})
    assert (held.bottleneck, held.recoverable["cpu"], rank_fixes(held)) == ("cpu", 0.2, ())
    assert why_no_fix(held) == (
        "no fix for CPU: cpu-contention offers no change for this job; "
        "`torchtop rules cpu-contention` says what recovers the time"
    )
    unknown = Verdict("unknown", 0.0, {}, "too few steps")
    assert why_no_fix(unknown) == "no fix until there is a verdict"
