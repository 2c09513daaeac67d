"""StackCollector with the real py-spy on real Python processes, and where their time goes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.collectors.conftest import Spawn, written
from tests.fake_run import FakeRun
from torchtop.analysis.stacks import attribute, classify_stack
from torchtop.collectors import stacks
from torchtop.collectors.stacks import ATTEMPTS, Dump, StackCollector, dump_all, find_py_spy
from torchtop.report.nodes import where_last
from torchtop.runs.journal import JournalWriter
from torchtop.runs.records import Bye, StacksSample, StackThread
from torchtop.runs.state import MAX_STACK_FRAMES, load_run
from torchtop.tui.hotstacks import hot_frames

PY_SPY = find_py_spy()
pytestmark = pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed")

# A training loop starved by its Dataset: each sample sleeps 20 ms, the step itself is tiny.
STARVED = """
import sys, time, torch
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)

class Slow(Dataset):
    def __len__(self):
        return 10**6

    def __getitem__(self, index):
        time.sleep(0.02)
        return torch.zeros(8)

model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step, batch in enumerate(DataLoader(Slow(), batch_size=4, num_workers=int(sys.argv[1]))):
    loss = model(batch).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 1:
        print("ready", flush=True)
"""

# A loop that is all compute: forward and backward take nearly all of it, the optimizer little.
COMPUTE = """
import torch

torch.set_num_threads(1)
model = torch.nn.Sequential(*[torch.nn.Linear(768, 768) for _ in range(6)])
optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
batch = torch.randn(256, 768)
for step in range(10**9):
    loss = model(batch).square().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step == 1:
        print("ready", flush=True)
"""

TWO_PYTHONS = """
import multiprocessing as mp, time

if __name__ == "__main__":
    worker = mp.Process(target=time.sleep, args=(120,))
    worker.start()
    print("ready", flush=True)
    time.sleep(120)
"""

BUSY = """
def spin():
    print("ready", flush=True)
    while True:
        sum(i * i for i in range(1000))

spin()
"""


WAIT_IN_IMPORT = 'import time\nprint("ready", flush=True)\ntime.sleep(120)\n'
"""The innermost module of an import chain: says it is in place, then waits there."""


def dumps(collector: StackCollector, count: int, gap_s: float = 0.05) -> list[dict[str, Any]]:
    records = []
    for _ in range(count):
        record = written(collector.sample())
        assert record is not None and record["kind"] == "stacks", record
        records.append(record)
        time.sleep(gap_s)
    return records


def typed(records: list[dict[str, Any]]) -> list[StacksSample]:
    """The collector's records as the sampler writes them, through the run folder's schema."""
    return [msgspec.convert(r, StacksSample) for r in records]


def main_thread(record: dict[str, Any]) -> dict[str, Any]:
    process = next(p for p in record["processes"] if p["role"] == "main")
    return next(t for t in process["threads"] if t["tid"] == process["pid"])


def test_a_job_waiting_on_its_dataset_is_in_the_dataloader(spawn: Spawn) -> None:
    job = spawn(STARVED, command=lambda script: [sys.executable, script, "0"])
    records = dumps(StackCollector(job.pid), 8)
    thread = main_thread(records[0])
    assert thread["frames"][0].keys() == {"function", "file", "line"}
    assert thread["frames"][-1]["function"] == "<module>"  # innermost first
    assert attribute(typed(records)).get("dataloader", 0.0) >= 0.75


def test_the_dataloader_workers_are_dumped_with_their_role(spawn: Spawn) -> None:
    job = spawn(STARVED, command=lambda script: [sys.executable, script, "2"])
    record = written(StackCollector(job.pid).sample())
    assert record is not None and record["kind"] == "stacks"
    roles = sorted(p["role"] for p in record["processes"])
    assert roles == ["main", "worker", "worker"]
    for process in record["processes"]:
        thread = next(t for t in process["threads"] if t["tid"] == process["pid"])
        assert (
            classify_stack(msgspec.convert(thread, StackThread).frames, thread["active"])
            == "dataloader"
        )


def test_a_compute_bound_loop_is_mostly_in_backward_and_forward(spawn: Spawn) -> None:
    job = spawn(COMPUTE)
    # Spread over ~2 s: on a loaded machine one slow backward can span many close samples.
    shares = attribute(typed(dumps(StackCollector(job.pid), 24, gap_s=0.08)))
    assert shares.get("dataloader") is None
    assert shares.get("backward", 0.0) + shares.get("forward", 0.0) >= 0.7, shares
    assert shares.get("backward", 0.0) > 0 and shares.get("forward", 0.0) > 0, shares


def test_a_pure_python_busy_loop_is_python(spawn: Spawn) -> None:
    job = spawn(BUSY)
    records = dumps(StackCollector(job.pid), 5)
    assert attribute(typed(records)) == {"python": 1.0}
    assert main_thread(records[0])["active"] is True


def test_a_sleeping_script_is_idle(spawn: Spawn) -> None:
    job = spawn('import time\nprint("ready", flush=True)\ntime.sleep(120)\n')
    assert attribute(typed(dumps(StackCollector(job.pid), 2))) == {"idle": 1.0}


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run py-spy as an unprivileged user",
)
def test_py_spy_without_ptrace_permission_is_unavailable_once_with_the_reason(
    spawn: Spawn,
) -> None:
    job = spawn('import time\nprint("ready", flush=True)\ntime.sleep(120)\n')
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(PY_SPY)]
    collector = StackCollector(job.pid, py_spy=nobody)
    record = written(collector.sample())
    assert record is not None and record["kind"] == "unavailable"
    assert record["reason"].startswith(f"py-spy has no ptrace permission for pid {job.pid}")
    assert "\n" not in record["reason"]
    assert collector.sample() is None


def test_a_process_that_is_not_python_gets_a_reason_saying_so() -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        time.sleep(0.1)
        [dump] = dump_all([str(PY_SPY)], [sleeper.pid], timeout_s=10)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert dump.threads is None
    assert dump.reason is not None and f"pid {sleeper.pid}" in dump.reason
    assert "not a Python process" in dump.reason or "could not read" in dump.reason


def test_a_process_gone_before_its_dump_is_skipped_without_a_reason() -> None:
    [dump] = dump_all([str(PY_SPY)], [2**22 + 12345], timeout_s=10)
    assert dump.threads is None and dump.reason is None


def test_a_missing_py_spy_is_unavailable_with_the_reason(spawn: Spawn) -> None:
    job = spawn('import time\nprint("ready", flush=True)\ntime.sleep(120)\n')
    record = written(StackCollector(job.pid, py_spy=["/nonexistent/py-spy"]).sample())
    assert record is not None and record["kind"] == "unavailable"
    assert record["reason"].startswith("cannot run py-spy (/nonexistent/py-spy)")


def test_a_python_named_process_py_spy_cannot_read_is_given_up_after_a_few_tries(
    tmp_path: Path,
) -> None:
    impostor = tmp_path / "python"  # looks like a training process by its command line
    impostor.symlink_to(shutil.which("sleep") or "/bin/sleep")
    job = subprocess.Popen([str(impostor), "60"])
    try:
        time.sleep(0.1)
        collector = StackCollector(job.pid)
        answers = [written(collector.sample()) for _ in range(ATTEMPTS + 1)]
    finally:
        job.kill()
        job.wait()
    assert answers[: ATTEMPTS - 1] == [None] * (ATTEMPTS - 1)
    last = answers[ATTEMPTS - 1]
    assert last is not None and last["kind"] == "unavailable"
    assert last["reason"].startswith(f"pid {job.pid} is not a Python process py-spy can read")
    assert answers[ATTEMPTS] is None


def test_a_pid_given_up_while_others_are_read_is_named_once_in_unreadable(
    spawn: Spawn, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = spawn(TWO_PYTHONS)
    real_dump_all = stacks.dump_all

    def refuse_workers(py_spy: list[str], pids: list[int], timeout_s: float) -> list[Dump]:
        dumps = real_dump_all(py_spy, pids, timeout_s)
        return [d if d.pid == job.pid else Dump(d.pid, reason="no", final=True) for d in dumps]

    monkeypatch.setattr(stacks, "dump_all", refuse_workers)
    collector = StackCollector(job.pid)
    first, second = written(collector.sample()), written(collector.sample())
    assert first is not None and second is not None
    assert [p["role"] for p in first["processes"]] == ["main"]
    assert [entry["reason"] for entry in first["unreadable"]] == ["no"]
    assert "unreadable" not in second


def test_a_rank_dumped_deep_in_an_import_keeps_its_innermost_and_its_own_outer_frames(
    spawn: Spawn, tmp_path: Path
) -> None:
    """A rank still importing (a dozen modules deep, about six interpreter frames each) when
    its last dump was taken: the report keeps where it was and the job's lines that led there."""
    depth = 14
    for level in range(depth):
        body = f"import chain_{level + 1}\n" if level + 1 < depth else WAIT_IN_IMPORT
        (tmp_path / f"chain_{level}.py").write_text(body, encoding="utf-8")
    job = spawn("def main():\n    import chain_0\n\nmain()\n")
    run = FakeRun(tmp_path / "run")
    run.hello(job.pid, rank=0)
    record = StackCollector(job.pid).sample()
    assert isinstance(record, StacksSample)
    with JournalWriter(run.layout.samples("stacks")) as writer:
        writer.write(record)
    run.agent(job.pid).write(Bye(t=record.t + 1, reason="seen by parent", signal="SIGKILL"))

    last = load_run(run.layout.root).processes[job.pid].last_stack

    assert last is not None
    dumped = main_thread(written(record))["frames"]
    assert len(dumped) > MAX_STACK_FRAMES  # deeper than what is kept
    assert len(last.frames) == MAX_STACK_FRAMES
    named = [(f.function, Path(f.file or "").name) for f in last.frames]
    assert named[0] == ("<module>", f"chain_{depth - 1}.py")  # where it waits
    assert named[-2:] == [("main", "job.py"), ("<module>", "job.py")]  # the job's way there
    assert f"chain_{depth - 1}.py" in where_last(last)


# A module that takes its time to import (as torch does), busy at its top level.
LOADS = 'print("ready", flush=True)\nwhile True:\n    pass\n'
# A loop whose time is inside the standard library (json), under one line of the job's own.
ENCODES = """
import json

def train():
    print("ready", flush=True)
    while True:
        json.dumps(list(range(5000)))

train()
"""


def test_the_hot_stacks_of_real_dumps_start_at_the_training_line_and_add_up_to_100(
    spawn: Spawn, tmp_path: Path
) -> None:
    """One job still importing its modules, one in its loop: the import's samples are set
    aside, and each loop sample counts once, at the job's own line."""
    (tmp_path / "loading.py").write_text(LOADS, encoding="utf-8")
    importing = StackCollector(spawn("import loading\n", name="starting.py").pid)
    training = StackCollector(spawn(ENCODES, name="encodes.py").pid)
    records = [dump for _ in range(3) for dump in (*dumps(importing, 1), *dumps(training, 1))]
    hot = hot_frames(typed(records))
    assert (hot.samples, hot.importing) == (3, 3)
    first = hot.frames[0]
    assert (first.function, Path(first.file).name, first.line, first.user) == (
        "train", "encodes.py", 7, True
    )  # fmt: skip
    assert sum(h.share for h in hot.frames) == pytest.approx(1.0)
    assert all(h.file.endswith("encodes.py") for h in hot.frames)
    assert first.inside and "json" in first.inside[0][1]  # where under the line time goes
