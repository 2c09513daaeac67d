"""op_cost's FLOPs against PyTorch's own count (torch.utils.flop_counter.FlopCounterMode), on
what torch.profiler records of the same calls: so both the formulas and the argument positions
of op_costs.toml are held to the PyTorch that wrote the trace. The calls run on meta tensors
(shapes only, no arithmetic), which lets the GPU-only attention kernels and their backwards be
recorded here.

Where the two count differently on purpose, the test converts: FlopCounterMode leaves out a bias
(torchtop adds one FLOP per output, as TraceLens does) and ignores a causal mask (torchtop counts
only the pairs the mask keeps). Its grouped-convolution weight gradient counts every input
channel against every filter, so the backward cases here are ungrouped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

from torchtop.analysis.op_cost import OpCost, modelled_operators, op_cost

aten = torch.ops.aten


def _meta(*shape: int) -> torch.Tensor:
    return torch.empty(*shape, device="meta", dtype=torch.bfloat16)


def _recorded(work: Callable[[], object], folder: Path) -> list[dict[str, Any]]:
    """The operator events torch.profiler writes for `work`, with their recorded arguments."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        work()
    trace = folder / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = json.loads(trace.read_text("utf-8"))["traceEvents"]
    return [event for event in events if "Input Dims" in event.get("args", {})]


def _outermost(events: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    """The events of `names` not inside another of them: on meta tensors aten::addmm runs
    aten::mm, and each level is modelled, so only the outer one counts."""
    found = [event for event in events if event["name"] in names]
    spans = [(event["ts"], event["ts"] + event["dur"]) for event in found]
    return [
        event
        for event, (start, end) in zip(found, spans, strict=True)
        if not any(s <= start and end <= e and (s, e) != (start, end) for s, e in spans)
    ]


def _ours(events: list[dict[str, Any]], name: str) -> float:
    total = 0.0
    for event in events:
        if event["name"] == name:
            args = event["args"]
            cost = op_cost(name, args["Input Dims"], args["Input type"], args["Concrete Inputs"])
            assert cost is not None, f"{name} not modelled from {args}"
            total += cost.flops
    return total


def _pytorchs(work: Callable[[], object]) -> dict[str, int]:
    with FlopCounterMode(display=False) as counter:
        work()
    counts = counter.get_flop_counts()["Global"]
    return {"aten::" + str(op).removeprefix("aten."): int(flops) for op, flops in counts.items()}


def _matrix_products() -> None:
    aten.mm(_meta(64, 128), _meta(128, 32))
    aten.bmm(_meta(4, 16, 8), _meta(4, 8, 12))
    aten.addmm(_meta(48), _meta(64, 128), _meta(128, 48))


def _convolutions() -> None:
    x, w = _meta(2, 8, 20, 20), _meta(16, 4, 3, 3)
    aten.convolution(x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 2)
    wide = _meta(2, 16, 20, 20)
    up = _meta(16, 8, 3, 3)
    aten.convolution(wide, up, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)


def _convolution_backwards() -> None:
    x, w = _meta(2, 8, 20, 20), _meta(16, 8, 3, 3)
    grad = _meta(2, 16, 10, 10)
    conv = ([2, 2], [1, 1], [1, 1], False, [0, 0], 1)
    aten.convolution_backward(grad, x, w, [16], *conv, [True, True, False])
    aten.convolution_backward(grad, x, w, [16], *conv, [False, True, False])


def _attention() -> None:
    q = _meta(2, 4, 64, 32)
    kv = _meta(2, 2, 80, 32)  # fewer heads (GQA) and a longer context
    flash = aten._scaled_dot_product_flash_attention(q, kv, kv, 0.0, False)
    out, lse, seed, offset = flash[0], flash[1], flash[6], flash[7]
    aten._scaled_dot_product_flash_attention_backward(
        out, q, kv, kv, out, lse, None, None, 64, 80, 0.0, False, seed, offset
    )
    eff = aten._scaled_dot_product_efficient_attention(q, kv, kv, None, True, 0.0, True)
    mask = [True, True, True, False]
    aten._scaled_dot_product_efficient_attention_backward(
        eff[0], q, kv, kv, None, eff[0], eff[1], eff[2], eff[3], 0.0, mask, True
    )


def _causal_share(n_q: int, n_kv: int) -> float:
    """Pairs a top-left causal mask keeps, for a query shorter than its keys."""
    return n_q * (n_q + 1) / 2 / (n_q * n_kv)


@pytest.mark.parametrize(
    ("work", "names"),
    [
        (_matrix_products, ["aten::mm", "aten::bmm", "aten::addmm"]),
        (_convolutions, ["aten::convolution"]),
        (_convolution_backwards, ["aten::convolution_backward"]),
        (
            _attention,
            [
                "aten::_scaled_dot_product_flash_attention",
                "aten::_scaled_dot_product_flash_attention_backward",
                "aten::_scaled_dot_product_efficient_attention",
                "aten::_scaled_dot_product_efficient_attention_backward",
            ],
        ),
    ],
    ids=["matrix products", "convolutions", "convolution backwards", "attention"],
)
def test_flops_from_the_profilers_record_match_pytorchs_flop_counter(
    work: Callable[[], None], names: list[str], tmp_path: Path
) -> None:
    events = _outermost(_recorded(work, tmp_path), set(names))
    theirs = _pytorchs(work)
    converted = {
        "aten::addmm": lambda ours: ours - 64 * 48,  # the bias: one add per output
        "aten::_scaled_dot_product_efficient_attention": lambda ours: ours / _causal_share(64, 80),
        "aten::_scaled_dot_product_efficient_attention_backward": lambda ours: (
            ours / _causal_share(64, 80)
        ),
    }
    for name in names:
        ours = converted.get(name, lambda flops: flops)(_ours(events, name))
        assert ours == pytest.approx(theirs[name], rel=1e-9), name


def _training_step() -> Callable[[], None]:
    """One AdamW step of a small convolutional and dense model, with softmax, a bfloat16 copy
    and a reduction over a dim: most operator families on the CPU, in float."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(8 * 8 * 8, 32),
        torch.nn.LayerNorm(32),
        torch.nn.GELU(),
        torch.nn.Linear(32, 10),
    )
    optimizer = torch.optim.AdamW(model.parameters())
    x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))

    def step() -> None:
        out = model(x)
        softmax = torch.nn.functional.softmax(out, -1).sum()
        peaks = out.to(torch.bfloat16).float().amax(dim=1).sum()
        (torch.nn.functional.cross_entropy(out, y) + softmax + peaks).backward()
        optimizer.step()
        optimizer.zero_grad()

    step()  # AdamW's state is made on the first step; the recorded one is a steady step
    return step


def test_every_modelled_operator_of_a_recorded_training_step_has_a_cost(tmp_path: Path) -> None:
    events = _recorded(_training_step(), tmp_path)
    modelled = modelled_operators()
    costs: dict[str, OpCost] = {}
    for event in events:
        if event["name"] in modelled:
            args = event["args"]
            cost = op_cost(
                event["name"], args["Input Dims"], args["Input type"], args["Concrete Inputs"]
            )
            assert cost is not None, f"{event['name']} {args}"
            costs[event["name"]] = cost
    assert len(costs) >= 40
    # layer norm over 32 features of 4 rows, in float: x read and y written (1024 bytes), weight
    # and bias read (256), a mean and an rstd written per row (32)
    assert costs["aten::native_layer_norm"].bytes == 1024 + 256 + 32
    # batch norm, training, 8 channels of 4x8x8: x and y (16384), weight, bias and the running
    # mean and variance read (128), save_mean and save_invstd (64), running stats rewritten (64)
    assert costs["aten::native_batch_norm"].bytes == 16384 + 128 + 64 + 64
    # the first convolution's input takes no gradient: its backward computes grad_weight only
    conv_backward = costs["aten::convolution_backward"]
    assert conv_backward.flops == 2 * (4 * 8 * 8 * 8) * (3 * 3 * 3) + 4 * 8 * 8 * 8
