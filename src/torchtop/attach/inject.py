"""`attach --inject`, the outside half: load torchtop's agent into a running Python process.

The attach writes a request into its run folder (`RUN/inject/request-<N>.json`), makes the
process run one statement at a safe point (the main thread, between two bytecodes, the GIL
held), and waits for the agent's answer (`ack-<N>.json`). The statement only runs the boot
script (`agent/bootstrap/inject_boot.py`) if the request still exists, so a statement that runs
after the attach gave up does nothing. The delivery is `sys.remote_exec` (PEP 768) where the
job's Python has it (3.14+; untested here: no 3.14 on this machine) and gdb's pending call on
3.11-3.13 (`gdb_call`). Ending the attach writes `RUN/inject/detach`; the agent removes its hooks,
stops its threads and answers `detached-<pid>.json`. docs/attach-inject.md has the whole story.

Everything that can be checked without stopping the process is checked first (ptrace rights,
gdb, the Python's version), each refusal one line naming the PID.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from torchtop.attach import gdb_call
from torchtop.attach.ptrace_access import check_ptrace
from torchtop.errors import InputError
from torchtop.runs.layout import RunLayout

PACKAGE_DIR = Path(__file__).resolve().parents[1]
BOOT = PACKAGE_DIR / "agent" / "bootstrap" / "inject_boot.py"
ACK_TIMEOUT_S = 10.0
DETACH_WAIT_S = 3.0
POLL_S = 0.05
INNER = """\
try:
    import os
    if os.path.exists(REQUEST):
        with open(BOOT, "rb") as boot:
            source = boot.read()
        exec(compile(source, BOOT, "exec"), {"__name__": "__torchtop_inject__", "REQUEST": REQUEST})
except BaseException:
    pass
"""
"""What the statement runs: nothing unless the request is still there; never raises (a pending
call that failed would raise SystemError in the job)."""


@dataclass(frozen=True)
class Injected:
    pid: int
    run_dir: Path
    number: int
    ack: Mapping[str, object]
    stopped_s: float | None
    """How long the process was stopped (ptrace stop to detach); None under `remote_exec`."""


def statement(request: Path, boot: Path | None = None) -> str:
    """The one expression statement the job runs: binds no name in its `__main__`."""
    boot = boot or BOOT
    names = {"__name__": "__torchtop_inject__", "REQUEST": str(request), "BOOT": str(boot)}
    namespace = ", ".join(f"{key!a}: {value!a}" for key, value in names.items())
    return f'__import__("builtins").exec({INNER!a}, {{{namespace}}})'


def mapped_files(process: psutil.Process) -> str | None:
    """The target's `/proc/PID/maps`, or None where it cannot be read."""
    try:
        with open(f"/proc/{process.pid}/maps", encoding="utf-8", errors="replace") as maps:
            return maps.read()
    except OSError:
        return None


def python_version(process: psutil.Process) -> tuple[int, int] | None:
    """The target's Python (major, minor), from the libpython it maps or its executable's name."""
    found = re.search(r"/libpython(\d+)\.(\d+)", mapped_files(process) or "")
    try:
        if found is None:
            found = re.search(r"python(\d+)\.(\d+)$", os.path.basename(process.exe()))
    except (OSError, psutil.Error):
        return None
    return (int(found.group(1)), int(found.group(2))) if found else None


def preflight(process: psutil.Process) -> tuple[int, int]:
    """Every check that does not stop the process; its Python's version, or InputError."""
    pid = process.pid
    check_ptrace(process)
    version = python_version(process)
    if version is None or version < (3, 11):
        said = "an unknown Python" if version is None else f"Python {version[0]}.{version[1]}"
        raise InputError(
            f"PID {pid}", f"runs {said}; --inject knows Python 3.11 and newer: attach "
            "without --inject (stack samples), or start the job with `torchtop run`"
        )  # fmt: skip
    if version < (3, 14) and gdb_path() is None:
        raise InputError(
            f"PID {pid}", "--inject needs gdb for Python 3.11-3.13 and none is on PATH: "
            "install it (`apt-get install gdb`), or attach without --inject"
        )  # fmt: skip
    maps = mapped_files(process)
    if maps is not None and "/libtorch" not in maps:
        raise InputError(
            f"PID {pid}", "has not imported torch: the agent would have nothing to hook; "
            "attach --inject once it trains"
        )  # fmt: skip
    if not BOOT.is_file():
        raise InputError(f"PID {pid}", f"this torchtop lacks its inject boot script {BOOT}")
    return version


def gdb_path() -> str | None:
    return shutil.which("gdb")


def inject(
    process: psutil.Process,
    version: tuple[int, int],
    run_dir: Path,
    timeout_s: float = ACK_TIMEOUT_S,
) -> Injected:
    """Load the agent into `process`, recording into `run_dir`; its ack, or InputError."""
    pid = process.pid
    layout = RunLayout(run_dir)
    number, request = _write_request(layout, pid)
    source = statement(request.resolve())
    try:
        if version >= (3, 14):
            stopped_s = None
            _remote_exec(process, source, layout.inject_dir / f"remote-{number}.py")
        else:
            gdb = gdb_path()
            assert gdb is not None  # preflight said so
            stopped_s = gdb_call.deliver(gdb, pid, source.encode()).stopped_s
        ack = _wait_for_ack(layout.inject_ack(number), process, timeout_s)
    except BaseException:
        # A pending call that runs later finds no request and does nothing; an agent that
        # started anyway sees the detach and leaves.
        request.unlink(missing_ok=True)
        layout.inject_detach.touch()
        raise
    if not ack.get("ok"):
        raise InputError(f"PID {pid}", f"the agent did not start: {ack.get('error')}")
    if ack.get("already_agent"):
        raise InputError(
            f"PID {pid}", "already runs the agent of a `torchtop run` (whose folder its "
            "environment does not show): `torchtop watch` that run folder instead"
        )  # fmt: skip
    return Injected(pid, run_dir, number, ack, stopped_s)


def _write_request(layout: RunLayout, pid: int) -> tuple[int, Path]:
    """The next `request-<N>.json` in the run folder (N counts up in a reused --run-dir)."""
    layout.inject_dir.mkdir(parents=True, exist_ok=True)
    # An earlier attach's, in a reused --run-dir.
    layout.inject_detach.unlink(missing_ok=True)
    layout.inject_detached(pid).unlink(missing_ok=True)
    number = 1 + len(list(layout.inject_dir.glob("request-*.json")))
    request = layout.inject_request(number)
    document = {
        "run_dir": str(layout.root.resolve()),
        "attacher_pid": os.getpid(),
        "package_dir": str(PACKAGE_DIR),
        "number": number,
        "requested_at": time.time(),
    }
    _write_atomically(request, document)
    return number, request


def _remote_exec(process: psutil.Process, source: str, script: Path) -> None:
    """PEP 768 through the job's own interpreter (ours may be older than 3.14)."""
    script.write_text(source + "\n", encoding="utf-8")
    script.chmod(0o644)
    call = "import sys; sys.remote_exec(int(sys.argv[1]), sys.argv[2])"
    try:
        done = subprocess.run(
            [process.exe(), "-I", "-c", call, str(process.pid), str(script)],
            capture_output=True,
            text=True,
            timeout=gdb_call.GDB_TIMEOUT_S,
        )
    except (OSError, psutil.Error, subprocess.TimeoutExpired) as exc:
        raise InputError(f"PID {process.pid}", f"sys.remote_exec failed: {exc}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no message"]
        raise InputError(f"PID {process.pid}", f"sys.remote_exec refused: {lines[-1]}")


def _wait_for_ack(ack: Path, process: psutil.Process, timeout_s: float) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        document = _read(ack)
        if document is not None:
            return document
        if not process.is_running():
            raise InputError(f"PID {process.pid}", "the process ended before the agent started")
        time.sleep(POLL_S)
    raise InputError(
        f"PID {process.pid}", f"its main thread did not come back to Python within "
        f"{timeout_s:g} s (inside a long C call?); nothing was loaded (--inject-timeout waits "
        "longer)"
    )  # fmt: skip


def detach(injected: Injected, wait_s: float = DETACH_WAIT_S) -> str:
    """Ask the agent to unload; one line saying whether it did."""
    layout = RunLayout(injected.run_dir)
    layout.inject_detach.touch()
    record = layout.inject_detached(injected.pid)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        document = _read(record)
        if document is not None:
            hooks = len(_names(document, "hooks_removed"))
            threads = len(_names(document, "threads_stopped"))
            return (
                f"torchtop: the agent unloaded from PID {injected.pid} ({hooks} hooks removed, "
                f"{threads} threads stopped)"
            )
        if not psutil.pid_exists(injected.pid):
            return f"torchtop: PID {injected.pid} has ended; nothing is left to unload"
        time.sleep(POLL_S)
    return (
        f"torchtop: no word from the agent in PID {injected.pid} within {wait_s:g} s (a later "
        "attach --inject may have replaced it); it unloads when it sees this attach gone"
    )


def _names(document: Mapping[str, object], key: str) -> list[object]:
    value = document.get(key)
    return value if isinstance(value, list) else []


def _read(path: Path) -> dict[str, object] | None:
    """A JSON object written atomically by the agent, or None while it is not there."""
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _write_atomically(path: Path, document: Mapping[str, object]) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(document), encoding="utf-8")
    os.replace(temporary, path)
