"""The results JSON, the Markdown summary and the bundle that comes back from the device."""

from __future__ import annotations

import tarfile
from pathlib import Path

import kit_checks as checks
from kit_bundle import bundle
from kit_steps import StepResult
from kit_summary import SCHEMA, markdown, results_document

MACHINE = {"mode": "GPU", "date": "2026-11-24 10:00 UTC", "device": "NVIDIA H100 80GB HBM3",
           "driver": "580.159.04, 81559 MiB", "torch": "2.11.0+cu130", "cuda": "13.0",
           "torchtop": "0.1.0", "python": "3.12.3", "budget_s": 450, "wall_s": 431.2}  # fmt: skip


def document() -> dict[str, object]:
    ran = StepResult("run:fp32-matmul", status="ok", started_t=10.0, ended_t=52.0,
                     report={"bottleneck": "gpu", "findings": [{"rule": "tensor-cores-unused"}],
                             "steps": {"steps_per_s": 4.98}},
                     figures={"steps_per_s": 5.01}, log_tail="x" * 5000)  # fmt: skip
    skipped = StepResult("run:fp32-compile", status="skipped (the kit's deadline)")
    found = [
        checks.verdict("fp32-matmul", ran.report, "gpu", "tensor-cores-unused"),
        checks.agent_cost("fp32-matmul", 5.0, 4.0),
        checks.agent_cost("fp32-matmul", None, 4.0),
    ]
    return results_document(MACHINE, [ran, skipped], found, {"readings": 840, "error": None})


def test_the_results_document_counts_the_checks_and_keeps_each_steps_outcome() -> None:
    doc = document()
    assert doc["schema"] == SCHEMA
    assert doc["tally"] == {"passed": 1, "failed": 1, "not_measured": 1}
    steps = doc["steps"]
    assert isinstance(steps, list) and steps[0]["seconds"] == 42.0
    assert steps[0]["findings"] == ["tensor-cores-unused"] and len(steps[0]["log_tail"]) == 600
    assert steps[1]["status"] == "skipped (the kit's deadline)" and steps[1]["seconds"] is None


def test_the_summary_names_the_machine_and_shows_every_check_with_its_figure() -> None:
    text = markdown(document())
    assert "NVIDIA H100 80GB HBM3; driver 580.159.04, 81559 MiB; torch 2.11.0+cu130" in text
    assert "Checks: 1 passed, 1 failed, 1 not measured." in text
    assert (
        "| fp32-matmul | agent cost | **FAIL** | bare 5.000 steps/s, under run 4.000: cost +20.0%"
        in text
    )
    assert "| run:fp32-matmul | ok | 42 | gpu | tensor-cores-unused | 4.980 | 5.010 |" in text
    assert "| run:fp32-compile | skipped (the kit's deadline) |" in text
    assert "nvidia-smi: 840 readings; no error." in text


def test_the_bundle_keeps_reports_and_logs_and_leaves_out_what_is_too_big(tmp_path: Path) -> None:
    work = tmp_path / "kit"
    (work / "run-a" / "run" / "traces").mkdir(parents=True)
    (work / "run-a" / "report.json").write_text("{}")
    (work / "run-a" / "log.txt").write_text("log")
    (work / "run-a" / "run" / "traces" / "h_1.1.pt.trace.json.gz").write_bytes(b"\0" * 1000)
    (work / "run-a" / "run" / "traces" / "h_1.2.pt.trace.json.gz").write_bytes(b"\0" * 5 * 2**20)
    packed = bundle(work, tmp_path / "kit-bundle.tar.gz")
    with tarfile.open(tmp_path / "kit-bundle.tar.gz") as archive:
        names = sorted(archive.getnames())
    assert names == ["kit/run-a/log.txt", "kit/run-a/report.json",
                     "kit/run-a/run/traces/h_1.1.pt.trace.json.gz"]  # fmt: skip
    assert packed["files"] == 3 and packed["skipped"] == 1
