"""`torchtop diff A B` from the command line: its JSON (`torchtop.diff/1`) holds the two full
reports `analyze` writes, saved JSON reports compare as their traces do, the text and Markdown
say the same ratio, and a missing input is one line and status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json
from tests.sessions.conftest import TUNED, Tuned
from torchtop.cli import main

EXIT_BAD_INPUT = 2


def diff(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["diff", *argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture(scope="module")
def twin_paths(shared: Path) -> tuple[str, str]:
    return str(shared / RESNET_NW0), str(shared / RESNET_NW4)


def test_diff_json_holds_the_schema_both_full_reports_and_the_changes(
    capsys: pytest.CaptureFixture[str], twin_paths: tuple[str, str]
) -> None:
    status, out, err = diff(capsys, *twin_paths, "--format", "json")
    assert status == 0, err
    document = json.loads(out)
    assert list(document) == ["schema", "a", "b", "changes"]
    assert document["schema"] == "torchtop.diff/1"
    assert document["a"] == analyze_json(twin_paths[0])
    assert document["b"] == analyze_json(twin_paths[1])
    assert set(document["changes"]) >= {
        "steps", "breakdown", "verdict", "operators", "kernels", "memory", "communication"
    }  # fmt: skip


def test_two_saved_json_reports_compare_as_their_traces_do(
    capsys: pytest.CaptureFixture[str], twin_paths: tuple[str, str], tmp_path: Path
) -> None:
    saved = []
    for name, path in zip(("a.json", "b.json"), twin_paths, strict=True):
        saved.append(tmp_path / name)
        saved[-1].write_text(json.dumps(analyze_json(path), indent=2))
    _, from_traces, _ = diff(capsys, *twin_paths, "--format", "json")
    status, from_reports, err = diff(capsys, *map(str, saved), "--format", "json")
    assert status == 0, err
    traces, reports = json.loads(from_traces)["changes"], json.loads(from_reports)["changes"]
    assert reports["inputs"]["a"] == {"path": str(saved[0]), "kind": "trace", "json_report": True}
    del traces["inputs"], reports["inputs"]
    assert reports == traces


def test_text_and_markdown_say_the_steps_per_s_ratio_of_the_two_reports(
    capsys: pytest.CaptureFixture[str], twin_paths: tuple[str, str]
) -> None:
    a, b = (analyze_json(p)["steps"]["steps_per_s"] for p in twin_paths)
    said = f"{b / a:.3f}"
    for output_format in ("text", "markdown"):
        status, out, err = diff(capsys, *twin_paths, "--format", output_format)
        assert status == 0, err
        line = next(line for line in out.splitlines() if "steps/s" in line)
        assert said in line and f"{a:g}" in line and f"{b:g}" in line
        assert "enumerate(DataLoader)#_SingleProcessDataLoade" in out


def test_a_missing_input_is_one_line_naming_it_and_status_2(
    capsys: pytest.CaptureFixture[str], twin_paths: tuple[str, str], tmp_path: Path
) -> None:
    missing = str(tmp_path / "nope.json")
    status, out, err = diff(capsys, twin_paths[0], missing)
    assert status == EXIT_BAD_INPUT and out == ""
    assert err == f"torchtop: {missing}: no such file or folder\n"


def test_a_broken_json_report_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], twin_paths: tuple[str, str], tmp_path: Path
) -> None:
    broken = tmp_path / "cut.json"
    broken.write_text('{\n  "schema": "torchtop.report/1",\n  "source": {')
    status, _, err = diff(capsys, str(broken), twin_paths[1])
    assert status == EXIT_BAD_INPUT
    assert (
        err.startswith(f"torchtop: {broken}: not a readable JSON report") and err.count("\n") == 1
    )


def test_a_json_report_with_no_steps_compares_with_dashes_not_a_crash(
    capsys: pytest.CaptureFixture[str], twin_paths: tuple[str, str], tmp_path: Path
) -> None:
    """tune's report when no run reported anything has no `steps` or `breakdown`."""
    empty = tmp_path / "tune.json"
    empty.write_text(json.dumps({
        "schema": "torchtop.report/1", "source": {"kind": "tune", "paths": []},
        "bottleneck": "unknown", "confidence": 0.0, "findings": [], "trials": [],
    }))  # fmt: skip
    status, out, err = diff(capsys, str(empty), twin_paths[1])
    assert status == 0, err
    said = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert said["steps/s"] == ["-", "7.089", "-"]
    assert said["dataloader"][0] == "-" and said["dataloader"][2] == "-"  # not measured, not 0
    assert "not in a JSON report (A: " in out


@pytest.mark.slow
@TUNED
def test_a_tune_trials_before_and_after_run_folders_diff_like_their_reports(
    capsys: pytest.CaptureFixture[str], tuned_starved: Tuned
) -> None:
    """A planted DataLoader-starved job, before and after tune's `--num-workers` fix: each run
    folder of the trial is a side. The ratio is the two run reports' own, and the fix shows
    whether or not the trial kept it (on a busy machine more workers can measure slower)."""
    tmp_path = tuned_starved.run_dir.parent
    trial = json.loads((tmp_path / "run" / "trials" / "01.json").read_text())
    assert [fix["knob"] for fix in trial["fixes"]] == ["dataloader.num_workers"]
    before = trial["runs"]["before"][0]["run_dir"]  # the baseline stands for before-1
    after = str(tmp_path / "run" / "trials" / "01" / "after-1")
    status, out, err = diff(capsys, before, after, "--format", "json")
    assert status == 0, err
    document = json.loads(out)
    a, b, found = document["a"], document["b"], document["changes"]
    assert (a["source"]["kind"], a["bottleneck"]) == ("tune", "dataloader")
    rate = found["steps"]["steps_per_s_ratio"]
    assert rate == b["steps"]["steps_per_s"] / a["steps"]["steps_per_s"]
    assert found["verdict"]["b"] == b["bottleneck"]
    # The fix is named before any figure: as tune applied it, and as the agent saw it.
    fix = trial["fixes"][0]
    said = {(e["what"], e["name"]): (e["a"], e["b"]) for e in found["settings"]}
    if fix["apply"] == "arg":
        assert said[("command", "--num-workers")] == (None, str(fix["value"]))
    else:
        assert said[("override", "dataloader.num_workers")] == (None, fix["value"])
    assert said[("recorded", "dataloader.num_workers")] == (0, fix["value"])
    assert found["moved"]["touched"] == ["dataloader"], found["moved"]
    # tune records a profiler window in the baseline and in after-1: with workers, collation
    # runs in them, so its `aten::stack` is gone from the job's own process.
    assert found["operators"]["available"], found["operators"]
    assert "aten::stack" in found["operators"]["gone"]
