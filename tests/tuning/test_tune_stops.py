"""Why tune stopped, said as it was: findings that offer no fix for the job are named as such,
not reported as "no untried fix applies", which reads as if fixes had been tried (a 2-rank
nanoGPT: all-reduce not overlapped, with gradients too small for the bucket advice)."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from tests.conftest import RULES_DIR
from tests.tuning.running import QUICK
from torchtop.diagnosis.rules import load_rules
from torchtop.sessions.offline import analyze_paths
from torchtop.tuning import tune

STARVED = Path(__file__).resolve().parents[2] / "sample_traces" / "dataloader_starved"


def test_findings_that_offer_no_fix_are_named_and_not_said_to_be_tried() -> None:
    report = analyze_paths([str(STARVED)], load_rules(RULES_DIR))
    findings = report.verdict.findings
    assert findings and any(finding.fixes for finding in findings)
    assert tune._nothing_left(report, QUICK).startswith("no untried fix applies")

    bare = tuple(replace(finding, fixes=()) for finding in findings)
    without = replace(report, verdict=replace(report.verdict, findings=bare))
    said = tune._nothing_left(without, QUICK)
    named = ", ".join(finding.rule for finding in findings)
    assert said == f"the diagnosis ({named}) offers no fix for this job"
