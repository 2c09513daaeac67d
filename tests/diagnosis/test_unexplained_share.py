"""A verdict comes with a finding of its class that explains its share, or says plainly that the
share is unexplained and what to record to find its cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RULES_DIR, SHARED, analyze_json
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import load_rules

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "sample_traces").rglob("*.json.gz"))
SHARED_TRACES = sorted(SHARED.rglob("*.json.gz")) if SHARED.is_dir() else []
NW4_EARLY = "kineto-tb-plugin-early/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz"


@pytest.mark.parametrize(
    "path", SAMPLES + SHARED_TRACES, ids=lambda p: str(p.relative_to(p.parents[2]))
)
def test_every_verdict_has_a_finding_of_its_class_or_says_its_share_is_unexplained(
    path: Path,
) -> None:
    report = analyze_json(path)
    verdict = report["bottleneck"]
    if verdict == "unknown":
        return
    own = [f for f in report["findings"] if f["class"] == verdict]
    note = report["verdict"]["unexplained"]
    assert own or note, f"{verdict} with no {verdict} finding and no note"
    if note:
        assert "record" in note or "watch" in note
    if verdict == "cpu" and report["gpu"]["utilization"]:
        assert own or report["verdict"]["unexplained_share"] > 0


def test_a_gpu_job_bound_by_host_work_is_named_by_its_host_wait_and_without_it_says_what_to_record(
    shared: Path,
) -> None:
    # ResNet-50 with 4 workers, oldest schema: the GPU idles 14% of the step while the host
    # works, and no launch, sync or Python rule reaches its bar (kernels are long, Other small).
    # The idle split names it: the GPU waits on the host between kernels.
    report = analyze_json(shared / NW4_EARLY)
    assert report["bottleneck"] == "cpu"
    own = [f["rule"] for f in report["findings"] if f["class"] == "cpu"]
    assert "gpu-waits-on-host" in own, own
    assert report["metrics"]["idle_host_wait_share"] > 0.1
    assert report["verdict"]["unexplained"] is None
    # Without the idle split (a trace whose launches were not recorded), no rule reaches its
    # bar: the verdict says the share is unexplained, and what to record.
    metrics = {k: v for k, v in report["metrics"].items() if not k.startswith("idle_")}
    verdict = diagnose(load_rules(RULES_DIR), metrics)
    assert verdict.bottleneck == "cpu"
    assert not [f for f in verdict.findings if f.bottleneck_class == "cpu"]
    assert verdict.unexplained_share == pytest.approx(verdict.recoverable["cpu"], abs=1e-3)
    assert verdict.unexplained is not None
    assert f"{verdict.unexplained_share:.0%} of the step in host work" in verdict.unexplained
    assert "with_stack=True" in verdict.unexplained
