"""What the `attach --inject` tests share: real processes to inject into, and when to skip.

Each test that stops a process needs gdb and the right to ptrace; where the container lacks
either, it is skipped with the reason, never faked.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import WORKLOADS
from torchtop.attach.ptrace_access import _has_cap_sys_ptrace, _yama_scope

TORCHTOP = [sys.executable, "-m", "torchtop"]
JOBS = WORKLOADS
PYENV = Path("/root/.pyenv/versions")
LOOP = "import time\nprint('ready', flush=True)\nwhile True:\n    time.sleep(0.01)\n"
"""A Python whose main thread comes back to bytecode a hundred times a second."""


def needs_gdb() -> None:
    if shutil.which("gdb") is None:
        pytest.skip("gdb is not installed (apt-get install gdb)")
    if not _has_cap_sys_ptrace() and (_yama_scope() or 0) >= 1:
        pytest.skip("this container does not allow ptrace (kernel.yama.ptrace_scope >= 1)")


def pyenv_python(version: str) -> Path:
    """pyenv's interpreter `version` (e.g. "3.6"), or a skip."""
    for folder in sorted(PYENV.glob(f"{version}.*")):
        exe = folder / "bin" / f"python{version}"
        if exe.is_file():
            return exe
    pytest.skip(f"no Python {version} here (pyenv's {PYENV} lacks it)")


@contextmanager
def running(command: Sequence[str], ready: str = "ready") -> Iterator[subprocess.Popen[str]]:
    """A process started without torchtop, once it has printed `ready`; killed afterwards."""
    job = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert job.stdout is not None
        line = job.stdout.readline()
        assert ready in line, f"the job did not start: {line!r}"
        yield job
    finally:
        if job.poll() is None:
            job.kill()
        job.wait()


def wait_for(path: Path, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()
