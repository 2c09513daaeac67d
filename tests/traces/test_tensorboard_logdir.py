"""`torchtop analyze LOGDIR` on a TensorBoard log folder of profiler traces (one run per
sub-folder, as `tensorboard_trace_handler` lays them out), built from the real shared traces."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json
from torchtop.cli import main

RANKS = ("hta/trace_filter/sampled_rank-0.json.gz", "hta/trace_filter/sampled_rank-1.json.gz")


@pytest.fixture
def logdir(shared: Path, tmp_path: Path) -> Path:
    """Three runs: the two ResNet-50 jobs of torch-tb-profiler's samples, and a two-rank job
    whose files are named as the handler names them (`<worker>.<span>.pt.trace.json.gz`)."""
    folder = tmp_path / "tb"
    for relative in (RESNET_NW0, RESNET_NW4):
        source = shared / relative
        run = folder / source.parent.name
        run.mkdir(parents=True)
        (run / source.name).symlink_to(source)
    ddp = folder / "ddp" / "nodes"  # a run's name is its path from the log folder
    ddp.mkdir(parents=True)
    for rank, relative in enumerate(RANKS):
        (ddp / f"rank{rank}.1600000000000.pt.trace.json.gz").symlink_to(shared / relative)
    return folder


def analyze(*args: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["analyze", *args, "--format", "json"])
    return status, json.loads(out.getvalue()) if status == 0 else {}, err.getvalue()


def without_source(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in ("source", "notes", "traces")}


def test_a_log_folder_of_several_runs_reads_the_newest_and_names_the_others(
    logdir: Path, shared: Path
) -> None:
    status, report, _ = analyze(str(logdir))
    assert status == 0
    assert report["source"]["paths"] == [
        str(logdir / "resnet50_num_workers_4" / Path(RESNET_NW4).name)
    ]
    direct = analyze_json(shared / RESNET_NW4)
    assert without_source(report) == without_source(direct)
    assert report["steps"]["mean_ms"] == pytest.approx(141.068, abs=0.001)  # the golden step
    (note,) = [n for n in report["notes"] if "TensorBoard log folder" in n]
    assert "3 runs" in note and "resnet50_num_workers_4, the newest" in note
    assert "resnet50_num_workers_0" in note and "ddp/nodes" in note and "--run NAME" in note


def test_run_chooses_a_run_by_its_name_and_reads_it_as_its_files_given_directly(
    logdir: Path, shared: Path
) -> None:
    status, report, _ = analyze(str(logdir), "--run", "resnet50_num_workers_0")
    assert status == 0
    assert without_source(report) == without_source(analyze_json(shared / RESNET_NW0))
    assert report["bottleneck"] == "dataloader"
    status, ranks, _ = analyze(str(logdir), "--run", "ddp/nodes")
    status_direct, direct, _ = analyze(*(str(shared / r) for r in RANKS))
    assert status == status_direct == 0
    assert without_source(ranks) == without_source(direct)
    assert len(ranks["ranks"]) == 2


def test_a_run_not_in_the_folder_is_a_one_line_error_listing_its_runs(logdir: Path) -> None:
    status, _, err = analyze(str(logdir), "--run", "resnet")
    assert status == 2
    assert err.strip().splitlines() == [
        f"torchtop: --run: no run 'resnet' in {logdir}; its runs: ddp/nodes, "
        "resnet50_num_workers_0, resnet50_num_workers_4"
    ]


def test_a_folder_of_one_run_reads_as_before_and_run_needs_a_log_folder(shared: Path) -> None:
    one_run = shared / Path(RESNET_NW0).parent
    status, report, _ = analyze(str(one_run))
    assert status == 0 and not any("TensorBoard" in n for n in report["notes"])
    status, _, err = analyze(str(shared / RANKS[0]), "--run", "x")
    assert status == 2 and "--run" in err
