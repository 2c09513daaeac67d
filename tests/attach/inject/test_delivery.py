"""The delivery on its own: the contract's statement reaches a running job at a safe point.

A stand-in boot script (the real one starts the agent, `test_inject_done.py`) records what the
job ran and answers as the contract says, so these tests see exactly what the outside does: the
request's fields, the namespace the boot runs in, a failed start's one line, and a main thread
that stays in C past the timeout (nothing is loaded, then or later).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil
import pytest

from tests.attach.inject.support import needs_gdb, pyenv_python, running
from torchtop.attach import gdb_call
from torchtop.attach import inject as injecting
from torchtop.errors import InputError

JOB = """\
import sys, time
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
time.sleep(float(sys.argv[2]))  # in C: no bytecode boundary until it returns
while time.monotonic() < end:
    time.sleep(0.01)
import __main__
print(sorted(vars(__main__)), flush=True)
"""
STAND_IN = """\
import json, os
folder = os.path.dirname(REQUEST)
request = json.load(open(REQUEST))
answer = {"pid": os.getpid(), "number": request["number"], "ok": False, "replaced": False,
          "already_agent": False, "error": "a stand-in agent that never starts",
          "python": "3.11", "torch": None, "seen": {"name": __name__, "request": request}}
with open(os.path.join(folder, "tmp-ack"), "w") as out:
    json.dump(answer, out)
os.replace(os.path.join(folder, "tmp-ack"), os.path.join(folder, f"ack-{request['number']}.json"))
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    boot = tmp_path / "stand_in_boot.py"
    boot.write_text(STAND_IN)
    monkeypatch.setattr(injecting, "BOOT", boot)
    return boot


def test_a_failed_start_is_one_line_with_the_agent_s_error(tmp_path: Path, stand_in: Path) -> None:
    needs_gdb()
    run_dir = tmp_path / "run"
    with running([sys.executable, "-c", JOB, "3", "0"]) as job:
        process = psutil.Process(job.pid)
        with pytest.raises(InputError) as refused:
            injecting.inject(process, (3, 11), run_dir, timeout_s=20)
        out, err = job.communicate(timeout=30)
    assert str(refused.value) == (
        f"PID {job.pid}: the agent did not start: a stand-in agent that never starts"
    )
    ack = json.loads((run_dir / "inject" / "ack-1.json").read_text())
    request = ack["seen"]["request"]
    assert ack["seen"]["name"] == "__torchtop_inject__"
    assert request["number"] == 1 and request["run_dir"] == str(run_dir.resolve())
    assert request["attacher_pid"] == psutil.Process().pid
    assert Path(request["package_dir"], "attach", "inject.py").is_file()
    # The statement bound no name in the job's __main__ (the job imported __main__ itself).
    names = ["__annotations__", "__builtins__", "__doc__", "__loader__", "__main__"]
    names += ["__name__", "__package__", "__spec__", "end", "sys", "time"]
    assert out.strip() == str(sorted(names))
    assert err == "" and job.returncode == 0


def test_a_main_thread_in_a_long_c_call_times_out_and_nothing_is_loaded_later(
    tmp_path: Path, stand_in: Path
) -> None:
    needs_gdb()
    run_dir = tmp_path / "run"
    with running([sys.executable, "-c", JOB, "6", "5"]) as job:
        with pytest.raises(InputError) as refused:
            injecting.inject(psutil.Process(job.pid), (3, 11), run_dir, timeout_s=1.5)
        _, err = job.communicate(timeout=30)
    assert str(refused.value) == (
        f"PID {job.pid}: its main thread did not come back to Python within 1.5 s (inside a "
        "long C call?); nothing was loaded (--inject-timeout waits longer)"
    )
    # The pending call ran once the sleep returned, found no request, and did nothing.
    assert not (run_dir / "inject" / "request-1.json").exists()
    assert not (run_dir / "inject" / "ack-1.json").exists()
    assert err == "" and job.returncode == 0


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_statement_reaches_the_other_pythons_it_knows(
    tmp_path: Path, stand_in: Path, version: str
) -> None:
    """The pending call's symbols and lock are the same in 3.12 and 3.13 (3.11 is the rest)."""
    needs_gdb()
    exe = pyenv_python(version)
    run_dir = tmp_path / "run"
    with running([str(exe), "-c", JOB, "30", "0"]) as job:
        process = psutil.Process(job.pid)
        with pytest.raises(InputError, match="a stand-in agent that never starts"):
            injecting.inject(process, (3, int(version[2:])), run_dir, timeout_s=20)
        assert job.poll() is None
    ack = json.loads((run_dir / "inject" / "ack-1.json").read_text())
    assert ack["pid"] == job.pid and ack["seen"]["name"] == "__torchtop_inject__"


def test_a_call_into_the_process_that_hangs_is_undone_and_the_process_goes_on() -> None:
    """Were gdb killed mid-call, the process would resume inside the call and return nowhere:
    it is interrupted instead, gdb puts the registers back, and detaches."""
    needs_gdb()
    with running([sys.executable, "-c", JOB, "4", "0"]) as job:
        session = gdb_call._Gdb("/usr/bin/gdb", job.pid, timeout_s=1.5)
        gdb_call._load_symbols(session)
        gdb_call._attach(session)
        with pytest.raises(InputError, match="gdb did not answer"):
            session.run("print ((unsigned int(*)(unsigned int))sleep)(5)")
        session.close()
        out, err = job.communicate(timeout=30)
    assert job.returncode == 0 and err == ""
    assert out.strip().startswith("['__annotations__'"), "the job ran on to its end"


GAPS = """\
import sys, time
print("ready", flush=True)
end = time.monotonic() + float(sys.argv[1])
last, longest = time.monotonic(), 0.0
while time.monotonic() < end:
    time.sleep(0.002)
    now = time.monotonic()
    longest, last = max(longest, now - last), now
print(f"{longest:.6f}", flush=True)
"""
"""A job that measures, on its own clock, the longest time it was kept from running."""


def test_the_stop_it_reports_is_the_stop_the_job_saw_on_its_own_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    needs_gdb()
    boot = tmp_path / "willing_boot.py"
    boot.write_text(STAND_IN.replace('"ok": False', '"ok": True'))
    monkeypatch.setattr(injecting, "BOOT", boot)
    with running([sys.executable, "-c", GAPS, "8"]) as job:
        injected = injecting.inject(psutil.Process(job.pid), (3, 11), tmp_path / "run", 20)
        out, _ = job.communicate(timeout=30)
    assert injected.stopped_s is not None
    longest_s = float(out)
    # The job's longest gap is the stop, plus the statement's own run and, on a loaded
    # machine, a scheduling delay (measured: stops of 0.28-0.32 s, gaps 0.03-0.05 s longer).
    assert 0.5 * injected.stopped_s <= longest_s <= injected.stopped_s + 0.3, (
        longest_s,
        injected.stopped_s,
    )
