"""The sample-trace makers still run and still write the traces the samples rely on.

Runs `sample_traces/make_dataloader_starved.py` (a real CPU training job under
`torch.profiler`) into a temporary folder and checks the gzipped Kineto trace it leaves:
one file, `ProfilerStep#N` markers, and the DataLoader's `__next__` events.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAKER = REPO / "sample_traces" / "make_dataloader_starved.py"
ACTIVE_STEPS = 3


@pytest.mark.slow
def test_dataloader_starved_maker_writes_a_profiled_trace(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "trace"
    done = subprocess.run(
        [sys.executable, str(MAKER), "--out", str(out), "--steps", str(ACTIVE_STEPS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr

    traces = list(out.glob("worker0.*.pt.trace.json.gz"))
    assert len(traces) == 1, sorted(p.name for p in out.iterdir())
    with gzip.open(traces[0], "rt", encoding="utf-8") as stream:
        trace = json.load(stream)

    names = [event.get("name", "") for event in trace["traceEvents"] if event.get("ph") == "X"]
    steps = [name for name in names if name.startswith("ProfilerStep#")]
    fetches = [name for name in names if "DataLoader" in name and name.endswith("__next__")]
    assert len(steps) == ACTIVE_STEPS
    assert len(fetches) >= ACTIVE_STEPS


@pytest.mark.slow
def test_the_twins_maker_records_a_job_before_and_after_its_fix(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tests.conftest import analyze_json

    maker = REPO / "sample_traces" / "make_twins.py"
    done = subprocess.run(
        [sys.executable, str(maker), "--only", "python", "--out", str(tmp_path), "--steps", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [before] = (tmp_path / "python" / "before").glob("worker0.*.pt.trace.json.gz")
    [after] = (tmp_path / "python" / "after").glob("worker0.*.pt.trace.json.gz")
    slow, fixed = analyze_json(before), analyze_json(after)
    assert slow["steps"]["count"] == fixed["steps"]["count"] == 2
    # The Python loop is time with no operator; the vectorised twin has far less of it.
    assert slow["breakdown"]["other"] > fixed["breakdown"]["other"] + 0.2
