"""Time per nn.Module, checked against forward/backward hooks in a real CPU job
(tests/workloads/module_times.py) and against the real traces with module calls."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS, analyze_json

JOB = WORKLOADS / "module_times.py"
H100 = "tracelens/h100"


def _flat(nodes: list[dict[str, Any]], above: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for node in nodes:
        path = f"{above}/{node['name']}" if above else node["name"]
        yield path, node
        yield from _flat(node["children"], path)


@pytest.fixture(scope="module")
def traced_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("module_times")
    subprocess.run(
        [sys.executable, str(JOB), str(out)], check=True, capture_output=True, timeout=300
    )
    (trace,) = out.glob("*.pt.trace.json")
    return analyze_json(trace), json.loads((out / "hooks.json").read_text())


def test_module_times_agree_with_the_jobs_own_hooks(
    traced_job: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    report, hooks = traced_job
    modules = dict(_flat(report["modules"]["tree"]))
    step_ms = report["metrics"]["step_mean_ms"]
    assert set(modules) == set(hooks)
    checked = 0
    for path, (forward_ms, backward_ms) in hooks.items():
        for ours, theirs in ((modules[path]["forward_ms"], forward_ms),
                             (modules[path]["backward_ms"], backward_ms)):  # fmt: skip
            if theirs > 0.05 * step_ms:
                assert ours == pytest.approx(theirs, rel=0.10), path
                checked += 1
    assert checked >= 5  # the Sequential and its big Linears, forward and backward


def test_a_modules_self_and_children_add_up_to_its_total(
    traced_job: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    report, _ = traced_job
    for _, node in _flat(report["modules"]["tree"]):
        kids = node["children"]
        for total, own in (("forward_ms", "forward_self_ms"), ("backward_ms", "backward_self_ms")):
            assert node[total] == pytest.approx(node[own] + sum(k[total] for k in kids), abs=1e-3)


@pytest.mark.parametrize(
    "name",
    [
        "gaunernst_bert-small-uncased__1016001.json.gz",
        "Falconsai_nsfw_image_detection__1016002.json.gz",
        # Not timesformer: 30 ms of module forward, then the host waits 350 ms on the GPU.
    ],
)
def test_on_real_traces_the_root_modules_fill_the_steps_forward(shared: Path, name: str) -> None:
    # One inference step each: the model's forward is the host's step (its ProfilerStep range)
    # less the step's set-up around the model's call.
    events = json.loads(gzip.decompress((shared / H100 / name).read_bytes()))["traceEvents"]
    (host_step,) = [
        e["dur"] / 1000
        for e in events
        if e.get("cat") == "user_annotation" and str(e.get("name")).startswith("ProfilerStep#")
    ]
    roots = analyze_json(shared / H100 / name)["modules"]["tree"]
    forward_ms = sum(r["forward_ms"] for r in roots)
    assert 0.8 * host_step < forward_ms <= host_step
    assert all(r["backward_ms"] is None for r in roots)  # inference: no backward recorded


def test_on_a_real_training_trace_backward_is_owned_by_the_model(shared: Path) -> None:
    report = analyze_json(shared / "tracelens/mi300/resnet_act_checkpoint.json.gz")
    modules = dict(_flat(report["modules"]["tree"]))
    ddp = modules["DistributedDataParallel_0"]
    assert ddp["backward_ms"] == pytest.approx(
        modules["DistributedDataParallel_0/ResNet_0"]["backward_ms"]
    )
    assert ddp["backward_ms"] > 0


def test_a_trace_without_module_calls_says_how_to_record_them(shared: Path) -> None:
    from torchtop.cli import main

    trace = shared / "hta/trace_compare/base/base.json.gz"
    assert "modules" not in analyze_json(trace)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["analyze", str(trace)])
    assert "profile with torch.profiler.profile(with_stack=True)" in out.getvalue()
