"""`diff`'s efficiency change on the shared ResNet-50 num_workers 0/4 twins: the same model (the
same FLOPs per step), a faster step (a higher MFU), each figure the two reports' own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json
from torchtop.model.diff import DiffSide
from torchtop.report.diff import changes
from torchtop.report.diff_text import render_diff_text


@pytest.fixture(scope="module")
def twins(shared: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return analyze_json(shared / RESNET_NW0), analyze_json(shared / RESNET_NW4)


def test_mfu_moves_by_the_two_reports_own_figures_and_the_work_stays_the_same(
    twins: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a, b = twins
    found = changes(DiffSide(a, "nw0"), DiffSide(b, "nw4"))
    change = found["efficiency"]
    ea, eb = a["efficiency"], b["efficiency"]
    assert change["available"] is True
    assert change["a"]["mfu"] == ea["mfu"] and change["b"]["mfu"] == eb["mfu"]
    assert change["mfu_change"] == round(eb["mfu"] - ea["mfu"], 6)
    # Four DataLoader workers shorten the step, not the model: more of the peak, same FLOPs.
    assert change["mfu_change"] > 0
    assert change["flops_per_step_ratio"] == eb["flops_per_step"] / ea["flops_per_step"] == 1.0
    longest = max(eb["ops"], key=lambda op: op["time_us"])
    first = change["ops"][0]
    assert (first["name"], first["input_dims"]) == (longest["name"], longest["input_dims"])
    assert first["b"]["tflops_s"] == longest["tflops_s"]
    text = render_diff_text(found)
    assert "EFFICIENCY" in text.upper()
    assert f"{ea['mfu']:.2%}" in text and f"{eb['mfu']:.2%}" in text


def test_a_side_without_efficiency_says_which_and_why(
    twins: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    a, b = twins
    bare = {k: v for k, v in b.items() if k != "efficiency"}
    change = changes(DiffSide(a, "a"), DiffSide(bare, "b"))["efficiency"]
    assert change["available"] is False
    assert change["why"].startswith("no efficiency in B ") and "record_shapes" in change["why"]
