"""A matrix operator is counted even where it runs copies of its own.

nanoGPT on the CPU (karpathy/nanoGPT's model.py, 4 layers, causal SDPA) counted 22.9 GFLOP a
step against its own PaLM count of 24.2: the CPU flash attention's backward zeroes and copies
its gradients inside itself, and the innermost-operator rule gave its FLOPs (2.5x the
forward's) to those copies. Here a real profile of causal SDPA, forward and backward, has both
rows, the backward at 2.5x the forward, as PyTorch's own FLOP counter has it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import analyze_json

B, H, T, D = 2, 4, 64, 32


def profiled_attention(folder: Path) -> Path:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

    q, k, v = (torch.randn(B, H, T, D, requires_grad=True) for _ in range(3))
    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=0, warmup=1, active=3),
        on_trace_ready=tensorboard_trace_handler(str(folder), worker_name="sdpa"),
    ) as prof:
        for _ in range(4):
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.sum().backward()
            prof.step()
    (trace,) = folder.glob("*.json*")
    return trace


def test_causal_sdpa_forward_and_backward_are_both_counted(tmp_path: Path) -> None:
    report = analyze_json(profiled_attention(tmp_path))
    rows = {o["name"]: o for o in report["efficiency"]["ops"] if o["family"] == "attention"}
    forward = rows["aten::_scaled_dot_product_flash_attention_for_cpu"]
    backward = rows["aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    # Two products of T x T x D per head, halved by the causal mask; the backward does five.
    assert forward["flops"] == 2 * B * H * T * T * D
    assert backward["flops"] == pytest.approx(2.5 * forward["flops"])
    assert forward["calls"] == backward["calls"] >= 3
