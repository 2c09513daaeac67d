"""`analyze --annotate`: real traces written back for Perfetto with torchtop's tracks added.

The outside truths: the original file (every event kept as it was), the report of the
unannotated trace (the added spans must measure what it says, step by step), and the hand-made
loop of `tests.synthetic` (its parts are known to the microsecond).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0, analyze_json, python_run
from tests.synthetic import EXPECTED_STEP_US, two_step_loop, write_json
from torchtop.cli import main
from torchtop.report.annotate import ANNOTATION_PID, write_annotated
from torchtop.sessions.offline import analyze_paths

EXIT_BAD_INPUT = 2
MI300_3_STEPS = "tracelens/mi300/resnet_act_checkpoint.json.gz"
NCCL = "hta/nccl_parser_config/nccl_data.json.gz"
NO_STEP_MARKERS = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
NANOSECONDS = "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
TWO_RANKS = "hta/trace_filter"


def analyze(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["analyze", *argv])
    return status, out.getvalue(), err.getvalue()


def annotate(trace: Path, out: Path) -> dict[str, Any]:
    """`analyze TRACE --format json --annotate OUT`: the report it printed."""
    status, report, err = analyze(str(trace), "--format", "json", "--annotate", str(out))
    assert status == 0, err
    stem = out.name.split(".")[0]
    assert err.startswith(f"torchtop: annotated trace written to {out.parent / stem}.")
    return json.loads(report)  # type: ignore[no-any-return]


def load(path: Path) -> Any:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:
        return json.load(handle)


def events_of(doc: Any) -> list[dict[str, Any]]:
    return doc["traceEvents"] if isinstance(doc, dict) else doc  # type: ignore[no-any-return]


def added(doc: Any) -> list[dict[str, Any]]:
    return [e for e in events_of(doc) if e.get("cat") == "torchtop"]


def without_paths(report: dict[str, Any]) -> dict[str, Any]:
    """A report with its file paths blanked: an annotated copy lies elsewhere, and only there
    may it differ."""
    report = json.loads(json.dumps(report))
    report["source"]["paths"] = []
    for trace in report["traces"]:
        trace["path"] = ""
    return report


@pytest.mark.parametrize(
    ("trace", "out_name"),
    [
        (RESNET_NW0, "resnet.json.gz"),
        (MI300_3_STEPS, "mi300.json"),
        (NCCL, "nccl.json.gz"),
        (NO_STEP_MARKERS, "alexnet.json.gz"),
        (NANOSECONDS, "ns.json"),
    ],
)
def test_an_annotated_trace_reads_back_with_the_report_of_the_original(
    shared: Path, tmp_path: Path, trace: str, out_name: str
) -> None:
    out = tmp_path / out_name
    printed = annotate(shared / trace, out)
    original = analyze_json(shared / trace)
    assert printed == original  # --annotate changes nothing of the report it prints
    assert without_paths(analyze_json(out)) == without_paths(original)
    assert analyze_json(out)["traces"][0]["events"] == original["traces"][0]["events"]
    assert (out.read_bytes()[:2] == b"\x1f\x8b") == out_name.endswith(".gz")


def test_the_annotated_file_keeps_every_original_event_and_adds_a_process_named_torchtop(
    shared: Path, tmp_path: Path
) -> None:
    out = tmp_path / "annotated.json.gz"
    annotate(shared / RESNET_NW0, out)
    before, after = load(shared / RESNET_NW0), load(out)
    assert isinstance(after, dict)
    assert {k: v for k, v in after.items() if k != "traceEvents"} == {
        k: v for k, v in before.items() if k != "traceEvents"
    }
    ours = added(after)
    assert [e for e in after["traceEvents"] if e.get("cat") != "torchtop"] == before["traceEvents"]
    assert len(after["traceEvents"]) == len(before["traceEvents"]) + len(ours)
    for event in ours:  # what the chrome trace format asks of each phase
        assert event["ph"] in {"M", "X", "i"}
        assert {"ph", "ts", "pid", "tid", "name"} <= event.keys()
        assert isinstance(event["ts"], float | int)
        assert event["pid"] == ANNOTATION_PID
        if event["ph"] == "X":
            assert event["dur"] >= 0
        if event["ph"] == "i":
            assert event["s"] == "t"
    assert ANNOTATION_PID not in {e.get("pid") for e in before["traceEvents"]}
    names = {(e["name"], e["args"]["name"]) for e in ours if e["ph"] == "M" and "name" in e["args"]}
    assert ("process_name", "torchtop") in names
    assert {n for kind, n in names if kind == "thread_name"} == {
        "torchtop: steps",
        "torchtop: breakdown",
        "torchtop: findings",
    }


@pytest.mark.parametrize("trace", [RESNET_NW0, MI300_3_STEPS])
def test_each_steps_breakdown_spans_measure_what_the_report_says_of_that_step(
    shared: Path, tmp_path: Path, trace: str
) -> None:
    out = tmp_path / "annotated.json.gz"
    annotate(shared / trace, out)
    ours = added(load(out))
    per_step = analyze_json(shared / trace)["steps"]["per_step"]
    steps = [e for e in ours if e["ph"] == "X" and e["tid"] == 1]
    assert [s["args"]["step"] for s in steps] == [s["step"] for s in per_step]
    assert len(steps) >= 3
    for span, reported in zip(steps, per_step, strict=True):
        assert span["name"] == f"step {reported['step']}"
        assert span["dur"] / 1000.0 == pytest.approx(reported["duration_ms"], abs=0.001)
        parts = [
            e
            for e in ours
            if e["ph"] == "X" and e["tid"] == 2 and e["args"]["step"] == span["args"]["step"]
        ]
        # Laid end to end from the step's start, in the report's order, within the step.
        assert parts[0]["ts"] == span["ts"]
        for first, second in itertools.pairwise(parts):
            assert second["ts"] == pytest.approx(first["ts"] + first["dur"], abs=0.002)
        assert parts[-1]["ts"] + parts[-1]["dur"] <= span["ts"] + span["dur"] + 0.01
        for category, share in reported["breakdown"].items():
            measured_us = sum(p["dur"] for p in parts if p["name"] == category)
            assert measured_us / span["dur"] == pytest.approx(share, abs=1e-4), category


def test_findings_are_instant_events_at_every_step_with_the_reports_evidence(
    shared: Path, tmp_path: Path
) -> None:
    out = tmp_path / "annotated.json.gz"
    report = annotate(shared / RESNET_NW0, out)
    marks = [e for e in added(load(out)) if e["ph"] == "i"]
    step_starts = {
        e["args"]["step"]: e["ts"] for e in added(load(out)) if e["tid"] == 1 and e["ph"] == "X"
    }
    assert report["findings"] and report["findings"][0]["rule"] == "dataloader-starved"
    for finding in report["findings"]:
        mine = [m for m in marks if m["args"]["rule"] == finding["rule"]]
        assert [m["args"]["step"] for m in mine] == [s["step"] for s in report["steps"]["per_step"]]
        for mark in mine:
            assert mark["name"] == finding["title"]
            assert mark["ts"] == step_starts[mark["args"]["step"]]
            assert mark["args"]["evidence"] == finding["evidence"]
            assert mark["args"]["fixes"] == finding["fixes"]


def test_a_bare_array_trace_stays_an_array_and_its_spans_have_the_loops_known_lengths(
    tmp_path: Path,
) -> None:
    trace = write_json(tmp_path / "loop.json", two_step_loop())  # no object around the array
    out = tmp_path / "loop.annotated.json"
    annotate(trace, out)
    after = load(out)
    assert isinstance(after, list)
    assert [e for e in after if e.get("cat") != "torchtop"] == two_step_loop()
    parts = [e for e in added(after) if e["ph"] == "X" and e["tid"] == 2]
    assert {p["args"]["step"] for p in parts} == {1, 2}
    for step in (1, 2):
        lengths = {p["name"]: p["dur"] for p in parts if p["args"]["step"] == step}
        assert lengths == {k: v for k, v in EXPECTED_STEP_US.items() if v}
    assert without_paths(analyze_json(out)) == without_paths(analyze_json(trace))


def test_an_empty_event_array_gets_torchtops_events_without_a_stray_comma(tmp_path: Path) -> None:
    source = tmp_path / "empty.json"
    source.write_text('{"schemaVersion": 1, "traceEvents": [ ], "displayTimeUnit": "ms"}')
    event = {"ph": "i", "s": "t", "cat": "torchtop", "name": "x", "pid": 1, "tid": 1, "ts": 0}
    write_annotated(source, tmp_path / "out.json", [event, event])
    assert json.loads((tmp_path / "out.json").read_text()) == {
        "schemaVersion": 1,
        "traceEvents": [event, event],
        "displayTimeUnit": "ms",
    }


def test_a_folder_of_two_ranks_gets_one_annotated_file_per_rank_with_that_ranks_findings(
    shared: Path, tmp_path: Path
) -> None:
    out = tmp_path / "job.json.gz"
    report = annotate(shared / TWO_RANKS, out)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["job.rank0.json.gz", "job.rank1.json.gz"]
    assert without_paths(analyze_json(tmp_path)) == without_paths(report)
    verdicts = {r.analysis.rank: r.verdict for r in analyze_paths([str(shared / TWO_RANKS)]).ranks}
    for rank in report["ranks"]:
        ours = added(load(tmp_path / f"job.rank{rank['rank']}.json.gz"))
        marks = [m["args"] for m in ours if m["ph"] == "i"]
        # The rank's own verdict (the report shows its class), not the job's pooled one.
        assert {m["rule"] for m in marks} == {f.rule for f in verdicts[rank["rank"]].findings}
        assert marks[0]["class"] == rank["bottleneck"] == "cpu"
        steps = [e["args"]["step"] for e in ours if e["ph"] == "X" and e["tid"] == 1]
        assert steps == [s["step"] for s in rank["steps"]["per_step"]]


LOOP = """
import sys, torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
def save(prof):
    prof.export_chrome_trace(sys.argv[1])
schedule = torch.profiler.schedule(wait=1, warmup=1, active=4)
with torch.profiler.profile(schedule=schedule, on_trace_ready=save) as prof:
    for _ in range(6):
        loss = model(torch.randn(32, 64)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        prof.step()
"""


def test_a_real_cpu_training_loops_trace_is_annotated_step_for_step(tmp_path: Path) -> None:
    trace = tmp_path / "loop.pt.trace.json"
    python_run(LOOP, str(trace))
    profiled = sorted(
        int(e["name"].split("#")[1])
        for e in events_of(load(trace))
        if str(e.get("name", "")).startswith("ProfilerStep#")
    )
    out = tmp_path / "loop.annotated.json.gz"
    report = annotate(trace, out)
    steps = [e for e in added(load(out)) if e["ph"] == "X" and e["tid"] == 1]
    assert [s["args"]["step"] for s in steps] == [s["step"] for s in report["steps"]["per_step"]]
    assert len(steps) >= 3
    assert {s["args"]["step"] for s in steps} <= set(profiled)  # the profiler's own steps
    assert without_paths(analyze_json(out)) == without_paths(analyze_json(trace))


def test_a_bad_out_path_is_one_line_naming_it_and_nothing_is_written(
    shared: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "base.json.gz"
    shutil.copy(shared / "hta/trace_compare/base/base.json.gz", trace)
    cases = {
        tmp_path / "missing" / "out.json": "no folder",
        tmp_path: "names a folder",
        trace: "would overwrite the trace it reads",
    }
    for out, problem in cases.items():
        status, printed, err = analyze(str(trace), "--annotate", str(out))
        assert status == EXIT_BAD_INPUT
        assert printed == ""
        assert err.count("\n") == 1 and err.startswith(f"torchtop: {out}: ") and problem in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.json.gz"]
    assert trace.read_bytes() == (shared / "hta/trace_compare/base/base.json.gz").read_bytes()


def test_a_run_folder_is_refused_naming_the_command_that_annotates_its_traces(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    recorded = subprocess.run(
        [
            sys.executable,
            "-m",
            "torchtop",
            "demo",
            "--headless",
            "--for",
            "5",
            "--run-dir",
            str(run),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (run / "run.json").is_file(), recorded.stderr
    status, printed, err = analyze(str(run), "--annotate", str(tmp_path / "out.json"))
    assert (status, printed) == (EXIT_BAD_INPUT, "")
    assert err.count("\n") == 1 and err.startswith(f"torchtop: {run}: ")
    assert err.rstrip().endswith(
        f"torchtop analyze {run / 'traces'} --annotate {tmp_path / 'out.json'}"
    )
    assert not (tmp_path / "out.json").exists()


NO_TORCH = """
import sys
from torchtop.cli import main
status = main(["analyze", sys.argv[1], "--format", "json", "--annotate", sys.argv[2]])
loaded = sorted(m for m in ("torch", "textual") if m in sys.modules)
print(status, loaded)
"""


def test_annotating_imports_neither_torch_nor_textual(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "base.json.gz"
    done = python_run(NO_TORCH, str(shared / "hta/trace_compare/base/base.json.gz"), str(out))
    assert done.stdout.splitlines()[-1] == "0 []"
    assert out.is_file()
