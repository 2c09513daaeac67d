"""Near the threshold, or with a runner-up close behind, the verdict's sentence says so and names
the class that could take the verdict."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RESNET_NW4, analyze_json

DLRM_RANK0 = "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz"
QWEN = "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def test_a_stall_verdict_with_a_close_runner_up_names_it_and_says_it_is_close(
    shared: Path,
) -> None:
    report = analyze_json(shared / DLRM_RANK0)  # host work 45% against NCCL 40%, one step
    assert report["bottleneck"] == "cpu" and report["confidence"] < 0.6
    assert report["verdict"]["reason"].endswith(
        "a close call, communication could take the verdict"
    )


def test_a_work_verdict_near_the_threshold_names_the_stall_that_could_take_it(
    shared: Path,
) -> None:
    report = analyze_json(shared / QWEN)  # host work 9.3%, under the 10% threshold
    assert report["bottleneck"] == "gpu" and report["confidence"] < 0.6
    assert (
        "a close call: cpu, near the threshold, could take the verdict"
        in (report["verdict"]["reason"])
    )


def test_a_confident_verdict_says_nothing_of_a_close_call(shared: Path) -> None:
    report = analyze_json(shared / RESNET_NW4)
    assert report["confidence"] >= 0.6
    assert "close call" not in report["verdict"]["reason"]
