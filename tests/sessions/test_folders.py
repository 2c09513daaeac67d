"""Folders of real traces: unrelated traces get one report each, an unreadable file is skipped
and named, a job's ranks still read as one job, and a cut `.gz` says what was really read."""

from __future__ import annotations

import json
import shutil
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0
from torchtop.cli import main
from torchtop.report import report_to_json
from torchtop.sessions.offline import analyze_jobs

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
MODELS = "tracelens/h100"
"""Five Hugging Face models profiled one by one on an H100: no rank, one step each."""
MULTI_RANK = ("param/dlrm_kineto", "hta/trace_filter")


def analyze(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    status = main(["analyze", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if captured.out else None, captured.err


@pytest.fixture
def models(tmp_path: Path, shared: Path) -> Path:
    folder = tmp_path / "models"
    shutil.copytree(shared / MODELS, folder, ignore=shutil.ignore_patterns("LICENSE"))
    return folder


def test_a_folder_of_unrelated_models_gives_each_its_own_report(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, document, _ = analyze(capsys, str(models))
    assert status == 0
    assert document["schema"] == "torchtop.reports/1"
    files = sorted(models.glob("*.json.gz"))
    assert [r["source"]["paths"] for r in document["reports"]] == [[str(f)] for f in files]
    assert document["apart"] == ["no rank recorded (Kineto's distributedInfo)"]
    for report, path in zip(document["reports"], files, strict=True):
        assert "ranks" not in report and report["metrics"].get("ranks_count") is None
        # Each report is the one the file gets alone.
        assert report == analyze(capsys, str(path))[1]


def test_the_text_summary_lists_every_model_with_its_own_verdict(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(models)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("torchtop · 5 jobs, each analysed on its own")
    assert "5 ranks" not in out
    for number, path in enumerate(sorted(models.glob("*.json.gz")), 1):
        assert f"job {number} of 5: {path.name}" in out


def test_an_empty_file_beside_good_traces_is_skipped_named_and_exits_0(
    models: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = models / "empty.json"
    empty.touch()
    status, document, err = analyze(capsys, str(models))
    assert status == 0
    assert document["skipped"] == [{"path": str(empty), "problem": "empty file"}]
    assert len(document["reports"]) == 5
    assert err == f"torchtop: skipped {empty}: empty file\n"


def test_a_folder_of_one_trace_and_an_empty_file_reports_the_trace_and_names_the_file(
    tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(shared / RESNET_NW0, tmp_path / "worker0.pt.trace.json.gz")
    (tmp_path / "empty.json").touch()
    status, document, err = analyze(capsys, str(tmp_path))
    assert status == 0
    assert document["schema"] == "torchtop.report/1"
    assert f"skipped {tmp_path / 'empty.json'}: empty file" in document["notes"]
    assert document["steps"]["count"] == 6
    assert "empty.json" in err


@pytest.mark.parametrize("folder", MULTI_RANK)
def test_a_real_jobs_ranks_still_read_as_one_job_with_the_same_numbers(
    shared: Path, folder: str
) -> None:
    found = analyze_jobs([str(shared / folder)])[0]
    forced = analyze_jobs([str(shared / folder)], one_job=True)[0]
    assert len(found.reports) == 1 and found.apart == ()
    assert report_to_json(found.reports[0]) == report_to_json(forced.reports[0])
    assert len(found.reports[0].ranks) == len(list((shared / folder).glob("*.json.gz")))


def test_two_real_jobs_in_one_folder_are_told_apart_by_world_size(
    tmp_path: Path, shared: Path
) -> None:
    sources = [*(shared / "hta/trace_filter").glob("*"), *(SAMPLES / "ddp_gloo").glob("*")]
    for source in sources:
        shutil.copy(source, tmp_path / source.name)
    jobs = analyze_jobs([str(tmp_path)])[0]
    assert [len(r.ranks) for r in jobs.reports] == [2, 2]
    assert [{Path(p).name[:4] for p in r.paths} for r in jobs.reports] == [{"rank"}, {"samp"}]
    assert jobs.apart == ("different world sizes or backends (2 gloo and 128 nccl)",)


def test_a_cut_gz_says_how_much_it_read_and_never_that_only_bytes_were_lost(
    tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = (shared / RESNET_NW0).read_bytes()
    cut_bytes = int(len(whole) * 0.26)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(whole[:cut_bytes])
    inflated = len(zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(whole[:cut_bytes]))
    status, document, err = analyze(capsys, str(cut))
    assert status == 0
    (trace,) = document["traces"]
    assert trace["truncated"] and trace["gzip_cut"]
    assert trace["file_bytes"] == cut_bytes
    assert trace["json_bytes"] == pytest.approx(inflated, rel=0.02)
    full_span_s = 1.065723  # the whole trace's `PyTorch Profiler (0)` span
    assert 0 < trace["last_event_s"] < full_span_s
    assert f"the .gz ends after {cut_bytes / 1e3:.0f} KB compressed" in err
    assert f"({inflated / 1e6:.1f} MB of JSON) with no gzip trailer" in err
    assert "lost the last" not in err
    assert any("none of its GPU events was read" in n for n in document["notes"])


def test_a_cut_plain_json_says_where_its_json_ends(tmp_path: Path, shared: Path) -> None:
    text = zlib.decompress((shared / RESNET_NW0).read_bytes(), 16 + zlib.MAX_WBITS)
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) // 2])
    (report,) = analyze_jobs([str(cut)])[0].reports
    (info,) = report.job.infos
    assert info.truncated and not info.gzip_cut
    assert info.json_bytes == len(text) // 2 == info.file_bytes
    assert (info.truncation() or "").startswith(
        f"truncated: the JSON ends after {len(text) // 2 / 1e6:.1f} MB, inside its event array"
    )


def test_view_on_unrelated_models_shows_the_first_as_one_job_and_says_so(
    models: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shown: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        "torchtop.tui.app.run_view", lambda report, state, aside=None: shown.append((report, aside))
    )
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # as from a terminal
    assert main(["view", str(models)]) == 0
    ((report, aside),) = shown
    first = sorted(models.glob("*.json.gz"))[0]
    assert report.paths == (str(first),) and not report.ranks
    assert aside == "job 1 of 5"
    err = capsys.readouterr().err
    assert err == (
        f"torchtop: the traces are 5 jobs, not one: showed the first, {first.name}; "
        "`torchtop analyze` reports each, `torchtop view FILE` shows another\n"
    )


def test_view_draws_a_progress_bar_on_stderr_while_it_reads_before_the_dashboard_opens(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, shared: Path
) -> None:
    """`view` of a big trace was blank for seconds: now the read shows its progress first."""
    monkeypatch.setenv("TORCHTOP_PROGRESS", "1")
    monkeypatch.setattr("torchtop.progress.DELAY_S", 0.0)  # drawn however fast the read
    opened: list[str] = []
    monkeypatch.setattr(
        "torchtop.tui.app.run_view",
        lambda report, state, aside=None: opened.append(capsys.readouterr().err),
    )
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["view", str(shared / RESNET_NW0)]) == 0
    (before,) = opened
    name = Path(RESNET_NW0).name
    assert f"{name[-39:]} [" in before or f"{name} [" in before
    assert "100%" in before
