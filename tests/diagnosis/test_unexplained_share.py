"""A verdict comes with a finding of its class that explains its share, or says plainly that the
share is unexplained and what to record to find its cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED, analyze_json

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


def test_a_gpu_job_bound_by_host_work_no_rule_names_says_so_and_what_to_record(
    shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ResNet-50 with 4 workers, oldest schema: the GPU idles 14% of the step while the host
    # works, yet no launch, sync or Python rule reaches its bar (kernels are long, Other small).
    report = analyze_json(shared / NW4_EARLY)
    assert report["bottleneck"] == "cpu"
    assert not [f for f in report["findings"] if f["class"] == "cpu"]
    verdict = report["verdict"]
    assert verdict["unexplained_share"] == pytest.approx(verdict["recoverable"]["cpu"], abs=1e-3)
    assert f"{verdict['unexplained_share']:.0%} of the step in host work" in verdict["unexplained"]
    assert "with_stack=True" in verdict["unexplained"]
    from torchtop.cli import main

    assert main(["analyze", str(shared / NW4_EARLY)]) == 0
    assert "No finding names the cause of" in capsys.readouterr().out
