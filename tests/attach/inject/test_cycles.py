"""Never harm the job: twenty inject/detach cycles leave a deterministic job's numbers exact.

The job trains until told to stop, with the agent injected and unloaded twenty times (once two
injections back to back, the second replacing the first); then the same job runs bare for the
same number of epochs. Its final loss must be the same bits, its exit status the same, its
output the same but for the agent's one announced line per injection, and no torchtop thread
may be left in it (py-spy's dump, from outside, and the agent's own detach records). The one
thread torch's profiler starts at its first window stays, as it does under `run`; nothing
else is left from cycle to cycle.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.attach.inject.support import JOBS, needs_gdb, running, wait_for
from torchtop.attach.inject import Injected, detach, inject
from torchtop.runs.layout import RunLayout

CYCLES = 20
ANNOUNCED = re.compile(
    r"^torchtop: agent loaded into PID \d+ by torchtop attach --inject .*\n", re.M
)


def cycle(process: psutil.Process, run_dir: Path, twice: bool) -> Injected:
    """Inject (twice when asked), see the agent time a step, then unload it."""
    injected = inject(process, (3, 11), run_dir, timeout_s=30)
    assert injected.ack["ok"] and not injected.ack["replaced"]
    if twice:
        again = inject(process, (3, 11), run_dir / "again", timeout_s=30)
        assert again.ack["replaced"], "a second injection replaces the first, never doubles it"
        assert wait_for(RunLayout(run_dir).inject_detached(process.pid), 5)
        injected = again
    events = RunLayout(injected.run_dir).agent_events(process.pid)
    deadline = time.monotonic() + 20
    while '"kind":"step"' not in _text(events) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert '"kind":"step"' in _text(events), "the injected agent timed no step"
    said = detach(injected, wait_s=10)
    assert said.startswith(f"torchtop: the agent unloaded from PID {process.pid}"), said
    return injected


def _text(path: Path) -> str:
    return path.read_text().replace(" ", "") if path.exists() else ""


@pytest.mark.slow
def test_twenty_inject_detach_cycles_leave_the_final_loss_bit_identical(tmp_path: Path) -> None:
    needs_gdb()
    stop = tmp_path / "stop"
    job_py = str(JOBS / "deterministic.py")
    with running([sys.executable, job_py, "--until", str(stop)]) as job:
        process = psutil.Process(job.pid)
        runs = [cycle(process, tmp_path / "run-0", twice=False)]
        # The first profiler window leaves torch's own profiler thread, as under `run`.
        threads_after_one = process.num_threads()
        runs += [cycle(process, tmp_path / f"run-{n}", twice=n == 10) for n in range(1, CYCLES)]
        dump = subprocess.run(
            [str(Path(sys.executable).parent / "py-spy"), "dump", "--pid", str(job.pid)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        threads_after = process.num_threads()
        stop.touch()
        out, err = job.communicate(timeout=120)
    assert dump.returncode == 0, dump.stderr
    assert "MainThread" in dump.stdout and "torchtop" not in dump.stdout, dump.stdout
    assert threads_after == threads_after_one, "nothing piles up from cycle to cycle"
    for injected in runs:
        record = json.loads(RunLayout(injected.run_dir).inject_detached(job.pid).read_text())
        assert record["threads_stopped"] == ["torchtop-inject"]
        assert record["hooks_removed"], "every hook it installed is named as removed"
    epochs = re.search(r"^epochs (\d+) ", out, re.M)
    assert epochs is not None, out
    bare = subprocess.run(
        [sys.executable, job_py, "--epochs", epochs.group(1)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert job.returncode == bare.returncode == 0
    assert "ready\n" + out == bare.stdout, (
        "the final loss (float.hex) and every other line are the same"
    )
    assert len(ANNOUNCED.findall(err)) == CYCLES + 1, err
    assert ANNOUNCED.sub("", err) == bare.stderr
