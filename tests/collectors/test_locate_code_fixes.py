"""Code fixes name the user's own file and line: found in real py-spy stacks of a real job and
in a real trace's `python_function` events, and shown as the line is written."""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest

from tests.collectors.conftest import Spawn, written
from torchtop.advice.locate import Location, dump_stacks, is_user_file, locate, trace_stacks
from torchtop.advice.patches import code_patch
from torchtop.collectors.stacks import StackCollector, find_py_spy
from torchtop.model.findings import Fix
from torchtop.runs.records import StacksSample

# A loop that reads a big reduction back every step (`.item()` on the line that computes it,
# so the line is on the stack while the work runs), with a per-batch copy (`.to(`) as well.
SYNCING = """
import torch

torch.set_num_threads(1)
model = torch.nn.Linear(64, 64)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
probe = torch.randn(600, 600)
total = 0.0
for step in range(10**9):
    batch = torch.randn(32, 64).to(torch.float64).to(torch.float32)
    loss = model(batch).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    total += (probe @ probe).sum().item()
    if step == 1:
        print("ready", flush=True)
"""
ITEM_LINE = "    total += (probe @ probe).sum().item()"
TRACE = "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz"


def sampled(job_pid: int, count: int = 12) -> list[dict[str, Any]]:
    collector = StackCollector(job_pid)
    records = []
    for _ in range(count):
        record = written(collector.sample())
        assert record is not None and record["kind"] == "stacks", record
        records.append(record)
        time.sleep(0.05)
    return records


def fix(knob: str, where: str | None) -> Fix:
    return Fix(knob, "x", "code", "A change.", where)


@pytest.mark.skipif(find_py_spy() is None, reason="py-spy is not installed")
def test_the_item_call_and_the_loop_are_found_in_a_real_jobs_stacks(spawn: Spawn) -> None:
    job = spawn(SYNCING, name="train.py")
    stacks = dump_stacks([msgspec.convert(r, StacksSample) for r in sampled(job.pid)])
    script = Path(cast(list[str], job.args)[1])
    lines = script.read_text().splitlines()

    found = locate("code.avoid_item", stacks)
    assert isinstance(found, Location), found
    assert (Path(found.file), found.text) == (script, ITEM_LINE)
    assert lines[found.line - 1] == ITEM_LINE  # the number is the file's own

    loop = locate("code.torch_compile", stacks)
    assert isinstance(loop, Location) and Path(loop.file) == script
    assert loop.text == lines[loop.line - 1]

    patch = code_patch(fix("code.avoid_item", str(found)))
    assert f"# at {script}:{found.line}, the line the job's stacks show:" in patch
    assert f"-{ITEM_LINE}\n" in patch
    assert "+    total += (probe @ probe).sum().detach()" in patch


def test_the_copy_line_becomes_non_blocking_in_the_patch(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("for x in loader:\n    x = x.to(device)\n", encoding="utf-8")
    found = locate("code.non_blocking_copy", [([(str(script), 2)], 1.0)])
    assert isinstance(found, Location)
    patch = code_patch(fix("code.non_blocking_copy", str(found)))
    assert "-    x = x.to(device)\n+    x = x.to(device, non_blocking=True)" in patch


def test_a_real_trace_with_python_stacks_names_the_users_line_outside_the_libraries(
    shared: Path,
) -> None:
    with gzip.open(shared / TRACE) as file:
        events = json.load(file)["traceEvents"]
    stacks = trace_stacks(events)
    found = locate("code.torch_compile", stacks)
    assert isinstance(found, Location), found
    # The harness's model adapter calls the Hugging Face model: the innermost frame that is
    # neither torch, transformers nor Python's own.
    assert found.file.startswith("moca/") and is_user_file(found.file)
    called = [
        f for frames, _ in stacks for i, f in enumerate(frames) if f == (found.file, found.line)
    ]
    assert called, "the line is on the trace's stacks"
    assert found.text is None  # the harness is not on this machine: said, not invented
    patch = code_patch(fix("code.torch_compile", str(found)))
    assert f"{found.file}:{found.line}" in patch and "not readable here" in patch
    unreadable = locate("code.avoid_item", stacks)
    assert unreadable == (
        "could not locate the line: no stack recorded a line of the job's that reads a tensor "
        "back to the host; the job's files are not readable here"
    )


def test_a_fix_with_no_stacks_says_it_could_not_locate_the_line() -> None:
    patch = code_patch(fix("code.torch_compile", None))
    assert "# could not locate the line: no Python stacks of the job were recorded" in patch
    assert "in a typical training loop" in patch


def test_library_and_standard_library_frames_are_not_the_users() -> None:
    assert not is_user_file(f"{sys.prefix}/lib/python3.11/site-packages/torch/nn/module.py")
    assert not is_user_file("torch/nn/modules/module.py")
    assert not is_user_file("threading.py")
    assert not is_user_file("<frozen importlib._bootstrap>")
    assert is_user_file("/home/me/project/train.py")
    assert is_user_file("moca/library/pipeline.py")


def test_autocast_wraps_the_forward_line_not_the_innermost_one(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "for x, y in loader:\n    loss = criterion(model(x), y)\n    optimizer.step()\n",
        encoding="utf-8",
    )
    # Sampled in optimizer.step() twice and in the forward line once: autocast goes round the
    # forward pass, wherever the samples fell most.
    stacks = [([(str(script), 3), (str(script), 1)], 2.0), ([(str(script), 2)], 1.0)]
    found = locate("amp.dtype", stacks)
    assert isinstance(found, Location) and found.line == 2
    patch = code_patch(Fix("amp.dtype", "float16", "code", "Autocast.", str(found)))
    assert "-    loss = criterion(model(x), y)\n" in patch
    assert '+    with torch.autocast(device_type="cuda", dtype=torch.float16):' in patch
    assert "+        loss = criterion(model(x), y)" in patch
    assert "GradScaler" in patch
