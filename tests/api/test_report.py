"""`Report`: saved and loaded, its tables (checked against the raw trace's own events), its
notebook view, and `torchtop.diff` against the CLI's `diff --format json`."""

from __future__ import annotations

import collections
import contextlib
import gzip
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import torchtop
from tests.conftest import analyze_json
from torchtop.api.comparing import settings_columns
from torchtop.api.frames import TABLES
from torchtop.cli import main
from torchtop.errors import InputError

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
[HEALTHY] = (SAMPLES / "healthy").glob("*.pt.trace.json.gz")
STARVED = SAMPLES / "dataloader_starved"
DDP = SAMPLES / "ddp_gloo"


@pytest.fixture(scope="module")
def healthy() -> torchtop.Report:
    return torchtop.analyze(HEALTHY)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """The CLI's JSON report of each sample used here, written to a file."""
    folder = tmp_path_factory.mktemp("reports")
    paths = {}
    for trace in (HEALTHY, STARVED, DDP):
        paths[trace] = folder / f"{trace.name}.json"
        paths[trace].write_text(json.dumps(analyze_json(trace), indent=2) + "\n")
    return paths


def _operators_in_steps(trace: Path) -> tuple[dict[str, int], dict[str, float]]:
    """Calls and summed durations of each `cpu_op` that starts inside a ProfilerStep, from
    the trace's raw events: the outside truth for the operators table."""
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]  # fmt: skip
    calls: collections.Counter[str] = collections.Counter()
    total: dict[str, float] = collections.defaultdict(float)
    for e in events:
        if e.get("cat") == "cpu_op" and any(a <= e["ts"] < b for a, b in spans):
            calls[e["name"]] += 1
            total[e["name"]] += e["dur"]
    return dict(calls), dict(total)


def test_operators_frame_has_a_row_per_operator_with_its_calls_and_time(
    healthy: torchtop.Report,
) -> None:
    frame = healthy.frame("operators")
    assert list(frame.columns) == ["name", "count", "total_us", "self_us", "per_step_us"]
    calls, total = _operators_in_steps(HEALTHY)
    assert dict(zip(frame["name"], frame["count"], strict=True)) == calls
    for name, total_us in zip(frame["name"], frame["total_us"], strict=True):
        assert total_us == pytest.approx(total[name], abs=0.01)
    steps = healthy.to_dict()["steps"]["count"]
    assert (frame["per_step_us"] * steps).tolist() == pytest.approx(frame["total_us"].tolist())
    # Sortable as any DataFrame: the longest self time is the matrix multiply.
    assert frame.sort_values("self_us", ascending=False)["name"].iloc[0] == "aten::mm"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_has_its_documented_columns_even_when_empty(
    healthy: torchtop.Report, name: str
) -> None:
    frame = healthy.frame(name)  # type: ignore[arg-type]
    assert tuple(frame.columns) == TABLES[name][0]
    documented = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    assert f"`{name}`: " + ", ".join(f"`{c}`" for c in TABLES[name][0]) in documented


def test_steps_and_ranks_frames_hold_the_reports_rows(
    healthy: torchtop.Report, saved: dict[Path, Path]
) -> None:
    per_step = healthy.to_dict()["steps"]["per_step"]
    steps = healthy.frame("steps")
    assert steps["duration_ms"].tolist() == [s["duration_ms"] for s in per_step]
    assert steps["cpu_exec"].tolist() == [s["breakdown"]["cpu_exec"] for s in per_step]
    ranks = torchtop.load_report(saved[DDP]).frame("ranks")
    assert ranks["rank"].tolist() == [0, 1]
    assert set(ranks["bottleneck"]) == {"communication"}


def test_an_unknown_table_names_the_ones_there_are(healthy: torchtop.Report) -> None:
    with pytest.raises(ValueError, match="operators, kernels, steps"):
        healthy.frame("ops")  # type: ignore[arg-type]


def test_frame_without_pandas_is_one_error_naming_it(saved: dict[Path, Path]) -> None:
    """pandas made unimportable in a fresh interpreter (None in sys.modules blocks it)."""
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "import torchtop\n"
        f"report = torchtop.load_report({str(saved[HEALTHY])!r})\n"
        "try:\n    report.frame('operators')\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "torchtop: Report.frame and compare need pandas, which is not installed: pip install pandas"
    )


def test_load_report_round_trips(healthy: torchtop.Report, tmp_path: Path) -> None:
    saved = healthy.save(tmp_path / "report.json")
    loaded = torchtop.load_report(saved)
    assert loaded.to_dict() == healthy.to_dict()
    assert loaded.render("json") == saved.read_text() == healthy.render("json")
    assert (loaded.bottleneck, loaded.findings) == (healthy.bottleneck, healthy.findings)
    assert loaded.from_json and not healthy.from_json


def test_load_report_refuses_what_is_not_a_report(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text('{"traceEvents": []}')
    with pytest.raises(InputError, match="not a torchtop JSON report"):
        torchtop.load_report(tmp_path / "other.json")
    with pytest.raises(InputError, match="not a readable JSON report"):
        torchtop.load_report(HEALTHY)


def _cli_diff(a: Path, b: Path) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["diff", str(a), str(b), "--format", "json"]) == 0
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def test_diff_to_dict_is_the_clis_and_takes_reports_in_hand(
    healthy: torchtop.Report, saved: dict[Path, Path]
) -> None:
    expected = _cli_diff(HEALTHY, saved[STARVED])
    assert torchtop.diff(HEALTHY, saved[STARVED]).to_dict() == expected
    # A report in hand is the same side as its trace file; a loaded one as its saved file.
    in_hand = torchtop.diff(healthy, torchtop.load_report(saved[STARVED])).to_dict()
    assert in_hand == expected
    assert in_hand["changes"]["verdict"]["b"] == "dataloader"


def test_repr_html_shows_the_verdict_the_step_bar_and_each_finding_with_its_fixes(
    saved: dict[Path, Path],
) -> None:
    starved = torchtop.load_report(saved[STARVED])
    page = starved._repr_html_()
    assert "VERDICT DATALOADER" in page
    assert starved.to_dict()["verdict"]["reason"].split("(")[0].strip() in page
    assert page.count("█") == 60  # the text report's bar, all of its cells
    for finding in starved.findings:
        assert finding["message"].replace("'", "&#x27;") in page
        for fix in finding["fixes"]:
            assert f"{fix['knob']} = {fix['value']}" in page


def test_compare_is_a_row_per_run_with_rate_shares_and_verdict(
    healthy: torchtop.Report, saved: dict[Path, Path]
) -> None:
    starved = torchtop.load_report(saved[STARVED])
    table = torchtop.compare({"healthy": healthy, "starved": starved})
    assert table["run"].tolist() == ["healthy", "starved"]
    assert table["bottleneck"].tolist() == ["cpu", "dataloader"]
    assert table["steps_per_s"].tolist() == [
        healthy.steps_per_s,
        starved.to_dict()["steps"]["steps_per_s"],
    ]
    assert table.loc[1, "dataloader"] == starved.to_dict()["breakdown"]["dataloader"]


def test_compare_flattens_a_recorded_runs_settings_to_a_column_each() -> None:
    settings = {
        "env": {"OMP_NUM_THREADS": "2"},
        "overrides": {},
        "agent": True,
        "dataloader": {"num_workers": 4, "pin_memory": False},
        "amp": "bf16",
        "options": [{"dest": "batch_size", "flags": ["--batch-size"], "value": "64"}],
    }
    assert settings_columns(settings) == {
        "env.OMP_NUM_THREADS": "2",
        "agent": True,
        "dataloader.num_workers": 4,
        "dataloader.pin_memory": False,
        "amp": "bf16",
        "option.batch_size": "64",
    }
