"""Each check's pass/fail rule on recorded values: reports, job figures, readings."""

from __future__ import annotations

from typing import Any

import kit_checks as checks
import pytest

from torchtop.runs.records import GpuDevice, GpuSample
from torchtop.tui.widgets.gpu import gpu_device

JOBS = "/r/benchmarks/gpu/jobs"
PANEL = """\
GPU0 NVIDIA H100 80GB HBM3
 util     ▁▂▅▇█████████████████████████ 97%
 SM       ▁▁▁▇█████████████████████████ 1980 MHz
 mem      ▁▁▁▇█████████████████████████ 12.4 GB / 85.0 GB
 power    ▁▁▁▇█████████████████████████ 612 / 700 W
"""


def fp32_report(**changes: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "bottleneck": "gpu",
        "steps": {"count": 140, "mean_ms": 200.0, "steps_per_s": 5.0,
                  "per_step": [{"step": n, "duration_ms": 200.0} for n in range(2, 141)]},
        "breakdown": {"kernel": 0.96},
        "findings": [
            {"rule": "tensor-cores-unused", "fixes": [
                {"knob": "amp.dtype", "value": "bfloat16"},
                {"knob": "torch.float32_matmul_precision", "value": "high"}]},
            {"rule": "sync-in-loop", "fixes": [
                {"knob": "code.avoid_item", "where": f"{JOBS}/item_sync.py:45: x.item()"}]},
        ],
    }  # fmt: skip
    report.update(changes)
    return report


def test_the_verdict_passes_only_with_the_planted_class_and_rule() -> None:
    assert checks.verdict("j", fp32_report(), "gpu", "tensor-cores-unused").passed is True
    assert checks.verdict("j", fp32_report(), "cpu", "tensor-cores-unused").passed is False
    assert checks.verdict("j", fp32_report(), None, "memory-near-capacity").passed is False
    assert checks.verdict("j", None, "gpu", "x").passed is None
    assert (
        "first finding tensor-cores-unused"
        in checks.verdict("j", fp32_report(), "gpu", None).figure
    )


def test_a_fix_is_offered_and_located_only_where_the_report_says_so() -> None:
    assert checks.fix_offered("j", fp32_report(), "tensor-cores-unused", "amp.dtype").passed is True
    assert (
        checks.fix_offered(
            "j", fp32_report(), "tensor-cores-unused", "dataloader.pin_memory"
        ).passed
        is False
    )
    assert checks.fix_located("j", fp32_report(), "sync-in-loop", "item_sync.py", 45).passed is True
    assert (
        checks.fix_located("j", fp32_report(), "sync-in-loop", "item_sync.py", 46).passed is False
    )


def test_within_compares_absolute_points_or_a_share_of_the_truth() -> None:
    assert checks.within("u", "j", 91.0, 97.0, 10.0, relative=False).passed is True
    assert checks.within("u", "j", 85.0, 97.0, 10.0, relative=False).passed is False
    assert checks.within("m", "j", 40321.0, 40000.0, 0.02, relative=True).passed is True
    assert checks.within("m", "j", 41000.0, 40000.0, 0.02, relative=True).passed is False
    off = checks.within("m", "j", None, 40000.0, 0.02, relative=True)
    assert off.passed is None and "torchtop has no figure" in off.figure


def test_the_step_times_match_the_jobs_clock_over_the_same_steps() -> None:
    # the report times its steps 2-140 (from 0) at 200 ms; the job printed every 10 steps
    marks = [(n, 1.0 + (n - 10) * 0.2) for n in range(10, 160, 10)]
    found = checks.same_steps("j", fp32_report(), {"marks": marks})
    assert found.passed is True and found.figure.startswith("job's steps 11-140: ")
    slower = [(n, t * 1.1) for n, t in marks]
    assert checks.same_steps("j", fp32_report(), {"marks": slower}).passed is False
    # the report keeps only its last steps: the span is the lines those steps cover
    recent = fp32_report(
        steps={"per_step": [{"step": n, "duration_ms": 200.0} for n in range(95, 140)]}
    )
    found = checks.same_steps("j", recent, {"marks": marks})
    assert found.passed is True and found.figure.startswith("job's steps 101-140: ")
    gap = fp32_report(steps={"per_step": [{"step": n, "duration_ms": 200.0} for n in (2, 3, 40)]})
    assert checks.same_steps("j", gap, {"marks": marks}).passed is None
    assert checks.same_steps("j", None, {"marks": marks}).passed is None


def test_the_reports_steps_count_from_0_and_the_jobs_from_1() -> None:
    # Recorded in the kit's dry run of 2026-11-27 (input-bound on the CPU, load about 10): the
    # job's lines at its steps 2-12, the report's per-step durations of its steps 2-11. The
    # job's steps 3-12 are the report's 2-11: 3.338 s against the job's 3.439 s (2.9%); read
    # as the report's 3-12 they would be 2.987 s (13% off).
    marks = [(2, 1.1324), (4, 1.7451), (6, 2.8807), (8, 3.1467), (10, 3.8572), (12, 4.5718)]
    durations = [503.049, 109.676, 527.438, 571.669, 129.847, 121.102, 61.358, 599.438,
                 219.888, 494.705, 151.391]  # fmt: skip
    per_step = [{"step": n, "duration_ms": ms} for n, ms in enumerate(durations, 2)]
    found = checks.same_steps("j", {"steps": {"per_step": per_step}}, {"marks": marks})
    assert found.passed is True and "torchtop 3.338 s vs truth 3.439 s" in found.figure


def test_the_agent_may_cost_at_most_three_percent_of_the_bare_rate() -> None:
    assert checks.agent_cost("j", 5.0, 4.9).passed is True
    assert checks.agent_cost("j", 5.0, 4.8).passed is False
    assert checks.agent_cost("j", None, 4.8).passed is None


def test_a_precision_trial_passes_when_kept_exactly_when_faster_and_fast_enough() -> None:
    def trial(speedup: float, kept: bool) -> dict[str, Any]:
        return {"trials": [{"fixes": [{"knob": "torch.float32_matmul_precision"}],
                            "speedup": speedup, "kept": kept, "predicted_gain": 20.0}]}  # fmt: skip

    assert checks.precision_trial("j", trial(3.2, True), 1.5).passed is True
    assert checks.precision_trial("j", trial(1.2, True), 1.5).passed is False
    assert checks.precision_trial("j", trial(0.9, True), 0.5).passed is False
    assert checks.precision_trial("j", {"trials": []}, 1.5).passed is None
    assert (
        "3.20x (predicted 20.00x), kept True"
        in checks.precision_trial("j", trial(3.2, True), 1.5).figure
    )


def test_attach_must_name_the_class_run_named() -> None:
    assert checks.same_class("j", {"bottleneck": "cpu"}, {"bottleneck": "cpu"}).passed is True
    assert (
        checks.same_class("j", {"bottleneck": "cpu"}, {"bottleneck": "dataloader"}).passed is False
    )


def test_compiled_steps_are_found_and_their_mean_is_the_steady_step() -> None:
    assert checks.compile_steps("j", fp32_report(), 5.0).passed is True
    assert checks.compile_steps("j", fp32_report(), 4.0).passed is False  # 250 ms steady
    empty = fp32_report(steps={"count": 0, "mean_ms": None})
    assert checks.compile_steps("j", empty, 5.0).passed is False


def test_the_panel_is_read_as_the_dashboards_gpu_lines_draw_it() -> None:
    device = GpuDevice(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        utilization_gpu_pct=63,
        sm_clock_mhz=1980,
        memory_used_bytes=40_321 * 2**20,
        memory_total_bytes=81_559 * 2**20,
        power_w=412.0,
        power_limit_w=700.0,
    )
    records = [GpuSample(t=float(t), devices=[device]) for t in range(30)]
    for detailed in (True, False):
        text = "\n".join(line.plain for line in gpu_device(records, device, 120, detailed))
        utilization, used = checks.parse_panel(text)
        assert utilization == 63.0 and used == pytest.approx(40_321 * 2**20, rel=0.002)


def test_the_dashboard_panel_shows_the_name_and_nvidia_smis_utilisation_and_memory() -> None:
    assert checks.parse_panel(PANEL) == (97.0, 12.4e9)
    name = "NVIDIA H100 80GB HBM3"
    assert checks.panel_shows("j", PANEL, name, 95.0, 12.4e9 / 2**20).passed is True
    assert checks.panel_shows("j", PANEL, name, 80.0, 12.4e9 / 2**20).passed is False
    assert checks.panel_shows("j", PANEL, name, 95.0, 14e9 / 2**20).passed is False
    assert checks.panel_shows("j", PANEL, "NVIDIA H200", 95.0, 12.4e9 / 2**20).passed is False
    no_gpu = "GPU   none · no NVIDIA GPU found\nCPU  ███ 100%\n"
    assert checks.panel_shows("j", no_gpu, None, None, None).passed is False
    assert checks.panel_shows("j", None, None, None, None).passed is None


def test_the_tally_counts_passes_failures_and_what_was_not_measured() -> None:
    found = [
        checks.agent_cost("j", 5.0, 4.9),
        checks.agent_cost("j", 5.0, 4.0),
        checks.agent_cost("j", None, 1.0),
    ]
    assert checks.tally(found) == {"passed": 1, "failed": 1, "not_measured": 1}
