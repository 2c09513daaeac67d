"""The steps' recorded results turned into checks: torchtop's NVML samples in a run folder
against nvidia-smi's readings of the same seconds, and the checks each kind of step gets."""

from __future__ import annotations

import json
from pathlib import Path

from kit_checks import Check
from kit_judge import judge, nvml_readings
from kit_steps import StepResult
from smi import Reading

T0 = 1_700_000_000.0


def record_samples(run_dir: Path, utilization: list[int], used_mib: float) -> None:
    samples = run_dir / "samples"
    samples.mkdir(parents=True)
    rows = [{"kind": "unavailable", "t": T0, "reason": "x"}] if not utilization else []
    for second, util in enumerate(utilization):
        device = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "utilization_gpu_pct": util,
                  "memory_used_bytes": int(used_mib * 2**20)}  # fmt: skip
        rows.append({"kind": "gpu", "t": T0 + second, "devices": [device], "processes": []})
    (samples / "gpu.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))


def fp32_run(run_dir: Path) -> StepResult:
    report = {"bottleneck": "gpu", "findings": [{"rule": "tensor-cores-unused", "fixes": []}],
              "steps": {"steps_per_s": 5.0}, "breakdown": {"kernel": 0.95}}  # fmt: skip
    figures = {"steps_per_s": 5.1, "gpu_share": 0.97}
    return StepResult(
        "run:fp32-matmul", "ok", T0, T0 + 30, report, figures, {"run_dir": str(run_dir)}
    )


def by_name(checks: list[Check]) -> dict[str, bool | None]:
    return {c.name: c.passed for c in checks}


def test_torchtops_gpu_samples_are_read_as_readings_of_device_0(tmp_path: Path) -> None:
    record_samples(tmp_path, [0, 50, 98], 1024.0)
    readings = nvml_readings(tmp_path)
    assert [(r.t - T0, r.utilization_pct, r.memory_used_mib) for r in readings] == [
        (0.0, 0, 1024.0), (1.0, 50, 1024.0), (2.0, 98, 1024.0)
    ]  # fmt: skip


def test_nvml_agrees_with_nvidia_smi_over_the_same_seconds_or_fails(tmp_path: Path) -> None:
    record_samples(tmp_path, [0] * 5 + [97] * 20, 40321.0)
    smi = [Reading(T0 + k / 2, 99.0 if k > 10 else 0.0, 40321.0) for k in range(60)]
    checks = by_name(judge({"run:fp32-matmul": fp32_run(tmp_path)}, smi, dry=False))
    assert checks["NVML util"] is True and checks["NVML memory"] is True
    assert (
        checks["verdict"] is True and checks["kernel share"] is True and checks["steps/s"] is True
    )
    far = [Reading(r.t, 70.0, 45000.0) for r in smi]
    checks = by_name(judge({"run:fp32-matmul": fp32_run(tmp_path)}, far, dry=False))
    assert checks["NVML util"] is False and checks["NVML memory"] is False


def test_without_gpu_samples_the_nvml_checks_are_not_measured(tmp_path: Path) -> None:
    record_samples(tmp_path, [], 0.0)
    checks = by_name(judge({"run:fp32-matmul": fp32_run(tmp_path)}, [], dry=True))
    assert checks["NVML util"] is None and checks["NVML memory"] is None


def test_skipped_steps_give_no_checks_and_attach_is_judged_against_run(tmp_path: Path) -> None:
    results = {
        "run:input-bound": StepResult("run:input-bound", "ok", report={"bottleneck": "dataloader"}),
        "attach:input-bound": StepResult("attach:input-bound", "ok", report={"bottleneck": "cpu"}),
        "tune:fp32-matmul": StepResult("tune:fp32-matmul", "skipped (the kit's deadline)"),
    }
    checks = judge(results, [], dry=True)
    attach = [c for c in checks if c.name == "attach class"]
    assert len(attach) == 1 and attach[0].passed is False
    assert not [c for c in checks if c.name == "tune precision"]


def test_a_known_gap_is_named_beside_the_verdict_it_fails() -> None:
    result = StepResult("run:memory-full", "ok", report={"bottleneck": "gpu", "findings": []})
    (verdict,) = [
        c for c in judge({"run:memory-full": result}, [], dry=False) if c.name == "verdict"
    ]
    assert verdict.passed is False and "known gap: under run the agent's windows" in verdict.figure
