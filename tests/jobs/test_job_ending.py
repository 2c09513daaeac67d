"""How a launched job ended, as its parent saw it: the last lines of its stderr in `exit.json`
(copied on to the terminal as they come), and a process that aborts after Python's exit named
by its signal, not by the `exit 0` its agent wrote (`jobs.job`, `jobs.stderr`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.tables import tables
from torchtop.agent.children import SEEN_BY_PARENT
from torchtop.jobs.job import start
from torchtop.runs.journal import JournalReader

CRASHES = """
import sys
print("working", flush=True)
print("a warning first", file=sys.stderr, flush=True)
raise RuntimeError("boom after the warning")
"""

# The agent attaches once torch is imported; libc's abort runs after Python's own exit.
ABORTS_AFTER_EXIT = """
import ctypes, torch
libc = ctypes.CDLL(None)
libc.__cxa_atexit.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
libc.__cxa_atexit(ctypes.cast(libc.abort, ctypes.c_void_p), None, None)
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
"""


def test_a_crash_on_the_terminal_is_copied_there_and_its_traceback_kept_in_exit_json(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    job = start([sys.executable, "-c", CRASHES], tmp_path / "run", "run", agent=False)
    job.process.wait(timeout=120)
    ending = job.finish()
    said = capfd.readouterr()
    assert "working" in said.out
    assert "a warning first" in said.err and "RuntimeError: boom after the warning" in said.err
    assert (ending.how, ending.exit_status) == ("crashed", 1)
    assert isinstance(ending.stderr_tail, list)
    assert ending.stderr_tail[0] == "a warning first"
    assert ending.stderr_tail[-1] == "RuntimeError: boom after the warning"
    assert ending.log == str(tmp_path / "run" / "stderr.log")


def test_a_job_that_aborts_after_python_exit_is_recorded_with_sigabrt(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    job = start([sys.executable, "-c", ABORTS_AFTER_EXIT], run_dir, "run")
    job.process.wait(timeout=120)
    ending = job.finish()
    assert (ending.how, ending.signal) == ("killed", "SIGABRT")
    records = tables(JournalReader(run_dir / "events" / f"agent-{job.pid}.jsonl").read_new())
    byes = [r for r in records if r["kind"] == "bye"]
    # The agent's own word at Python's exit, then its parent's, which the reader keeps.
    assert byes[0].get("exit_code") == 0 and "signal" not in byes[0]
    assert (byes[-1]["signal"], byes[-1]["reason"]) == ("SIGABRT", SEEN_BY_PARENT)
