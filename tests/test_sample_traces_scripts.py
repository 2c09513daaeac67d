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
