"""`attach --inject` refuses what it cannot do safely: one line naming the PID, exit status 2.

Every refusal here comes before anything stops the process, but the one gdb itself makes
(`ptrace: Operation not permitted`), which is checked through the delivery directly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.attach.inject.support import LOOP, TORCHTOP, needs_gdb, pyenv_python, running, wait_for

SETPRIV = "/usr/bin/setpriv"
SYSTEM_PYTHON = "/usr/bin/python3.11"
"""Readable by every user, unlike pyenv's under /root: the other users' interpreter."""


def inject(
    pid: int, tmp_path: Path, env: dict[str, str] | None = None, extra: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *TORCHTOP,
            "attach",
            str(pid),
            "--inject",
            "--headless",
            "--run-dir",
            str(tmp_path / "r"),
            *(extra or []),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def one_line(result: subprocess.CompletedProcess[str], pid: int) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"torchtop: PID {pid}: "), lines[0]
    return lines[0]


def test_a_pid_that_is_not_python_is_refused_in_one_line(tmp_path: Path) -> None:
    with running(["sh", "-c", "echo ready; exec sleep 60"]) as job:
        line = one_line(inject(job.pid, tmp_path), job.pid)
    assert "not a Python process" in line
    assert not (tmp_path / "r").exists(), "a refusal records nothing"


@pytest.mark.parametrize("version", ["3.6", "2.7"])
def test_a_python_it_does_not_know_is_refused_naming_its_version(
    tmp_path: Path, version: str
) -> None:
    exe = pyenv_python(version)
    loop = "import time, sys\nsys.stdout.write('ready\\n'); sys.stdout.flush()\n"
    loop += "while True: time.sleep(0.01)\n"
    with running([str(exe), "-c", loop]) as job:
        line = one_line(inject(job.pid, tmp_path), job.pid)
        assert job.poll() is None, "a refusal never touches the job"
    assert f"runs Python {version}; --inject knows Python 3.11 and newer" in line
    assert not (tmp_path / "r").exists()


def test_without_gdb_on_path_it_is_refused_with_how_to_install_it(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    with running([sys.executable, "-c", LOOP]) as job:
        line = one_line(inject(job.pid, tmp_path, {**os.environ, "PATH": str(empty)}), job.pid)
    assert "needs gdb for Python 3.11-3.13 and none is on PATH" in line
    assert "apt-get install gdb" in line


def as_user(user: str, *command: str) -> list[str]:
    return [SETPRIV, f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]


def other_users_torchtop(pid: int, code: list[str]) -> subprocess.CompletedProcess[str]:
    """torchtop (or `code`) run as `daemon` by the system Python, on this checkout's sources."""
    if os.geteuid() != 0 or not Path(SETPRIV).exists() or not Path(SYSTEM_PYTHON).exists():
        pytest.skip("needs root, setpriv and /usr/bin/python3.11 to run as two other users")
    site = next(Path(sys.prefix, "lib").glob("python3.*/site-packages"))
    src = Path(__file__).resolve().parents[3] / "src"
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": f"{src}:{site}", "HOME": "/tmp"}
    return subprocess.run(
        as_user("1", SYSTEM_PYTHON, *code), capture_output=True, text=True, timeout=60,
        env=env, cwd="/tmp",
    )  # fmt: skip


def test_a_job_of_another_user_is_refused_before_anything_stops_it() -> None:
    with running(as_user("65534", SYSTEM_PYTHON, "-c", LOOP)) as job:
        result = other_users_torchtop(
            job.pid, ["-m", "torchtop", "attach", str(job.pid), "--inject"]
        )
        line = one_line(result, job.pid)
    assert "you may not ptrace it: it runs as uid 65534, you as uid 1" in line
    assert "as that user, or as root" in line


def test_the_delivery_s_own_ptrace_refusal_is_one_line_naming_the_pid() -> None:
    needs_gdb()
    deliver = (
        "import sys\nfrom torchtop.errors import InputError\n"
        "from torchtop.attach.gdb_call import deliver\n"
        "try:\n    deliver('/usr/bin/gdb', int(sys.argv[1]), b'pass', 30)\n"
        "except InputError as e:\n    print(e)\n"
    )
    with running(as_user("65534", SYSTEM_PYTHON, "-c", LOOP)) as job:
        result = other_users_torchtop(job.pid, ["-c", deliver, str(job.pid)])
        assert job.poll() is None
    assert result.stdout.strip() == (
        f"PID {job.pid}: you may not ptrace it (its memory map is unreadable): run "
        "`torchtop attach --inject` as the job's user, or as root"
    ), result.stderr


def test_a_job_started_by_torchtop_run_is_followed_through_its_folder_with_nothing_injected(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    launcher = subprocess.Popen(
        [*TORCHTOP, "run", "--headless", "--for", "20", "--run-dir", str(run_dir), "--",
         sys.executable, "-c", LOOP],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert wait_for(run_dir / "run.json", 60), "torchtop run never started its job"
        pid = json.loads((run_dir / "run.json").read_text())["pid"]
        result = inject(pid, tmp_path, extra=["--for", "2"])
    finally:
        launcher.send_signal(signal.SIGINT)
        launcher.wait(timeout=60)
    assert result.returncode == 0, result.stderr
    assert (
        f"torchtop: PID {pid} was started by `torchtop run`: its agent already records steps "
        "and windows, so nothing is injected; following its run folder"
    ) in result.stderr
    assert not (run_dir / "inject").exists() and not (tmp_path / "r").exists()


def test_a_bad_inject_timeout_is_one_line_naming_the_option() -> None:
    result = subprocess.run(
        [*TORCHTOP, "attach", "1", "--inject", "--inject-timeout", "soon"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2
    assert (
        result.stderr == "torchtop: --inject-timeout: 'soon' is not a positive number of seconds\n"
    )


def test_a_job_without_torch_is_refused_before_it_is_stopped(tmp_path: Path) -> None:
    with running([sys.executable, "-c", LOOP]) as job:
        line = one_line(inject(job.pid, tmp_path), job.pid)
        assert job.poll() is None
    assert line.endswith("has not imported torch: the agent would have nothing to hook; "
                         "attach --inject once it trains")  # fmt: skip
    assert not (tmp_path / "r").exists(), "nothing was loaded, so nothing is kept"
