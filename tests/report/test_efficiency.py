"""`torchtop analyze`'s Efficiency section, in text, Markdown and JSON; and on a real CPU job's
profile, FLOPs exact and the achieved rate that of torch.utils.benchmark on the same matmul."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import analyze_json
from torchtop.cli import main

BERT = "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz"
NO_SHAPES = "hta/nccl_parser_config/nccl_data.json.gz"


def analyze(path: Path, *options: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(path), *options]) == 0
    return out.getvalue()


def test_the_text_report_gives_mfu_and_the_longest_operators_on_the_roofline(
    shared: Path,
) -> None:
    section = analyze_json(shared / BERT)["efficiency"]
    text = analyze(shared / BERT)
    lines = text.splitlines()
    head = lines.index("EFFICIENCY NVIDIA H100 80GB HBM3")
    assert lines[head + 1].startswith(
        f"  MFU {section['mfu']:.1%} of the bf16 peak (989.4 TFLOP/s)"
    )
    longest = section["ops"][0]
    assert longest["name"] == "aten::addmm"
    row = lines[head + 3].split()
    assert row[:5] == [
        f"{longest['time_us'] / 1000:.2f}",
        str(longest["calls"]),
        f"{longest['tflops_s']:.1f}",
        f"{longest['tb_s']:.2f}",
        f"{longest['roofline_fraction']:.0%}",
    ]
    assert row[5] == "aten::addmm"


def test_markdown_has_the_section_and_a_trace_without_shapes_has_none(shared: Path) -> None:
    markdown = analyze(shared / BERT, "--format", "markdown")
    assert "## Efficiency" in markdown
    assert "| `aten::addmm` | `[[512],[141,512],[512,512],[],[]]` | 17 |" in markdown
    assert "EFFICIENCY" not in analyze(shared / NO_SHAPES)
    assert "## Efficiency" not in analyze(shared / NO_SHAPES, "--format", "markdown")


M, K, N = 512, 768, 640
CALLS_PER_STEP, STEPS = 4, 8


def _profile_matmuls(path: Path) -> float:
    """Profile STEPS steps of CALLS_PER_STEP `torch.mm` on the CPU, with shapes, into `path`;
    return torch.utils.benchmark's mean time of the same call, taken between the steps."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    a, b = torch.randn(M, K), torch.randn(K, N)
    # One thread: on a shared machine, two threads' calls vary with the other processes' load
    # by 4x between the benchmark and the profile; one thread's by well under 25%.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _timed_profile(torch, a, b, path)
    finally:
        torch.set_num_threads(threads)


def _timed_profile(torch: Any, a: Any, b: Any, path: Path) -> float:
    """The benchmark runs between the profiled steps, inside the profile (so under the same
    profiler and, in short blocks, the same moments' load), and outside every step, so none of
    its calls counts."""
    from torch.profiler import ProfilerActivity, profile, record_function
    from torch.utils.benchmark import Timer

    timer = Timer("torch.mm(a, b)", globals={"torch": torch, "a": a, "b": b}, num_threads=1)
    # Means, not medians: the profile's rate is its calls' total time, a mean too.
    means = []
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for step in range(STEPS):
            means.append(timer.blocked_autorange(min_run_time=0.15).mean)
            # The markers `prof.step()` writes only under a schedule, written by hand.
            with record_function(f"ProfilerStep#{step}"):
                for _ in range(CALLS_PER_STEP):
                    torch.mm(a, b)
        means.append(timer.blocked_autorange(min_run_time=0.15).mean)
    prof.export_chrome_trace(str(path))
    return float(sum(means) / len(means))


@pytest.mark.alone
def test_a_cpu_jobs_matmuls_have_exact_flops_and_the_rate_torch_benchmark_measures(
    tmp_path: Path,
) -> None:
    """On a CPU-only trace an operator's time is its own span: its rate is the matmul's."""
    path = tmp_path / "cpu_mm.json"
    seconds = _profile_matmuls(path)
    report = json.loads(analyze(path, "--format", "json"))
    section = report["efficiency"]
    assert section["device"] == "CPU" and section["time"] == "host"
    [row] = [o for o in section["ops"] if o["name"] == "aten::mm"]
    assert row["input_dims"] == [[M, K], [K, N]]
    assert row["flops"] == 2 * M * K * N
    steps = section["steps"]
    assert (steps, row["calls"]) == (STEPS, CALLS_PER_STEP * STEPS)
    assert section["flops_per_step"] == pytest.approx(2 * M * K * N * CALLS_PER_STEP)
    measured = 2 * M * K * N / seconds / 1e9
    assert row["tflops_s"] * 1e3 == pytest.approx(measured, rel=0.25)
