"""Queue one statement as a pending call in a running CPython 3.11-3.13, through gdb.

gdb stops the process (ptrace), maps one page with `mmap` in it (a system call wrapper, safe
wherever the thread stopped, unlike `malloc`, whose lock the stopped thread may hold), copies
the statement's bytes into the page with plain memory writes (`restore ... binary`: a gdb string
literal would be allocated with the target's `malloc`), and calls
`Py_AddPendingCall(PyRun_SimpleString, page)`. Then it detaches. The main thread runs the
statement at its next bytecode boundary with the GIL held: the safe point. Before the call it
checks that the main thread is not stopped inside the pending-call machinery (which holds the
lock the call takes); if it is, it lets the process run a moment and stops it again.

gdb is driven over a pipe, one command at a time, so each answer can be read before the next
command (the page's address, a refusal). Only libpython's and libc's symbols are read, and
before the stop, at the addresses `/proc/PID/maps` gives them: a job that has imported torch
maps hundreds of MB of libraries, and reading symbols at the stop kept it stopped three times
as long (1.3 s against 0.45 s, measured on a loaded 2-core machine). So a Python without the
symbols is refused before it is ever stopped. The page stays mapped afterwards (4 KB; freeing
it would need a second stop).
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from torchtop.errors import InputError

SYMBOLS = ("Py_AddPendingCall", "PyRun_SimpleString", "mmap")
PENDING_FRAMES = re.compile(
    r"\b(Py_AddPendingCall|_PyEval_AddPendingCall|_push_pending_call|_pop_pending_call|"
    r"make_pending_calls|_make_pending_calls|Py_MakePendingCalls|_Py_MakePendingCalls)\b"
)
"""Frames that hold (or take) the pending calls' lock: a call into them there would deadlock."""
STOPS_TRIED = 5
GDB_TIMEOUT_S = 30.0
"""For each gdb command: reading libpython's symbols takes a few seconds on a loaded machine."""
PAGE_BYTES = 4096
MMAP_CALL = "((void*(*)(void*, unsigned long, int, int, int, long))mmap)(0, 4096, 3, 34, -1, 0)"
"""PROT_READ|PROT_WRITE (3), MAP_PRIVATE|MAP_ANONYMOUS (0x22); typed, for a libc without
debug information."""
EARLY = (
    "set auto-load off",
    "set auto-solib-add off",
    # Without libthread_db gdb still sees every thread (as LWPs) and attaches in half the time.
    "set libthread-db-search-path /nonexistent",
)
_VALUE = re.compile(r"^\$\d+ = (?:\([^)]*\) )?(-?0x[0-9a-f]+|-?\d+)", re.MULTILINE)
_SENTINEL = "__torchtop_gdb_done__"
AS_WHOM = ": run `torchtop attach --inject` as the job's user, or as root"
_LIBRARY = re.compile(r"/lib(python3\.\d+t?|c)\.so[.\d]*$")


@dataclass(frozen=True)
class Delivery:
    """What the delivery cost the job: `stopped_s` from the ptrace stop to the detach."""

    page_address: int
    stopped_s: float
    stops: int


class _Gdb:
    """gdb on a pipe: `run` sends one command and returns everything it printed."""

    def __init__(self, gdb: str, pid: int, timeout_s: float) -> None:
        self.pid = pid
        self.timeout_s = timeout_s
        self.attached = False
        self.stuck = False
        """A command did not answer in time (a call into the process that hangs)."""
        self.process = subprocess.Popen(
            [gdb, "-nx", "-q", *(arg for setting in EARLY for arg in ("-iex", setting))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "LC_ALL": "C"},
            # Ctrl-C on the terminal must reach torchtop, which detaches cleanly, not gdb.
            start_new_session=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name="torchtop-gdb-reader", daemon=True).start()
        for setting in ("pagination off", "confirm off", "width 0", "unwindonsignal on"):
            self.run(f"set {setting}")
        self.run("set debuginfod enabled off")  # an older gdb without it just says so

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def run(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{command}\necho \\n{_SENTINEL}\\n\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + self.timeout_s
        said: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stuck = True
                raise InputError(
                    f"PID {self.pid}", f"gdb did not answer `{command[:40]}` within "
                    f"{self.timeout_s:g} s; nothing was loaded"
                ) from None  # fmt: skip
            if line is None or line.strip().endswith(_SENTINEL):
                return "".join(said).replace("(gdb) ", "")
            said.append(line)

    def value(self, command: str) -> int:
        """The number gdb printed for `command` (`$1 = (void *) 0x7f...`)."""
        said = self.run(command)
        found = _VALUE.search(said)
        if found is None:
            raise InputError(f"PID {self.pid}", f"gdb: {_last_line(said)}")
        return int(found.group(1), 0)

    def close(self) -> None:
        if self.stuck:
            # Interrupt the call: with `unwindonsignal` gdb puts back the registers it had
            # before the call, so the detach below leaves the process where it was stopped.
            # Killing gdb mid-call would resume the process inside the call, returning nowhere.
            with contextlib.suppress(OSError):
                os.kill(self.process.pid, signal.SIGINT)
        with contextlib.suppress(OSError, ValueError, InputError):
            if self.attached:
                self.run("detach")
            assert self.process.stdin is not None
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        try:
            self.process.wait(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            # A gdb that hangs is killed; the kernel then detaches the process, which goes on.
            self.process.kill()
            self.process.wait()


def deliver(gdb: str, pid: int, statement: bytes, timeout_s: float = GDB_TIMEOUT_S) -> Delivery:
    """Queue `statement` (NUL-terminated by this) as a pending call in `pid`, or InputError."""
    if len(statement) >= PAGE_BYTES:
        raise InputError(f"PID {pid}", "the statement to inject does not fit one page")
    with tempfile.TemporaryDirectory(prefix="torchtop-inject-") as folder:
        payload = Path(folder) / "statement"
        payload.write_bytes(statement + b"\0")
        session = _Gdb(gdb, pid, timeout_s)
        try:
            _load_symbols(session)
            return _call(session, payload)
        finally:
            session.close()


def _call(session: _Gdb, payload: Path) -> Delivery:
    pid = session.pid
    for stop in range(1, STOPS_TRIED + 1):
        stopped_at = time.monotonic()
        _attach(session)
        if not PENDING_FRAMES.search(session.run("bt 16")):
            page = session.value(f"print {MMAP_CALL}")
            if page in (0, -1, 2**64 - 1):
                raise InputError(f"PID {pid}", "mmap in the process failed; nothing was loaded")
            session.run(f"restore {payload} binary {page:#x}")
            queued = session.value(
                f"print (int)Py_AddPendingCall((int (*)(void *))PyRun_SimpleString, "
                f"(void *){page:#x})"
            )
            session.run("detach")
            session.attached = False
            stopped_s = time.monotonic() - stopped_at
            if queued != 0:
                raise InputError(
                    f"PID {pid}", "its interpreter's pending calls are full; try again"
                )
            return Delivery(page, stopped_s, stop)
        session.run("detach")
        session.attached = False
        time.sleep(0.05)  # it was inside the pending calls' lock: let it leave, stop again
    raise InputError(
        f"PID {pid}", f"its main thread stayed inside the pending-call machinery over {stop} "
        "stops; nothing was loaded, try again"
    )  # fmt: skip


def _attach(session: _Gdb) -> None:
    pid = session.pid
    said = session.run(f"attach {pid}")
    if "Operation not permitted" in said:
        raise InputError(
            f"PID {pid}", f"gdb may not ptrace it (ptrace: Operation not permitted){AS_WHOM}"
        )
    if "No such process" in said or "Attaching to" not in said:
        raise InputError(f"PID {pid}", f"gdb could not attach: {_last_line(said)}")
    session.attached = True
    # The call runs on the main thread (the one whose id is the process id).
    for line in session.run("info threads").splitlines():
        found = re.match(rf"^\*?\s*(\d+)\s+.*\bLWP {pid}\b", line)
        if found:
            session.run(f"thread {found.group(1)}")


def _load_symbols(session: _Gdb) -> None:
    """The executable's, libpython's and libc's symbols, read before the process is stopped;
    every other library is left unread (`set sysroot` to nowhere)."""
    pid = session.pid
    session.run("set sysroot /nonexistent")
    session.run(f"file /proc/{pid}/exe")
    for path, base in libraries(pid):
        session.run(f'add-symbol-file "{path}" -o {base:#x}')
    missing = [s for s in SYMBOLS if "No symbol" in session.run(f"info address {s}")]
    if missing:
        raise InputError(
            f"PID {pid}", f"its Python lacks the symbols {', '.join(missing)} (a static "
            "or stripped build); attach without --inject, or start it with `torchtop run`"
        )  # fmt: skip


def libraries(pid: int) -> list[tuple[str, int]]:
    """libpython's and libc's files and load addresses in `pid` (where each is mapped)."""
    found: dict[str, int] = {}
    try:
        maps_file = open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace")  # noqa: SIM115
    except PermissionError:
        raise InputError(
            f"PID {pid}", f"you may not ptrace it (its memory map is unreadable){AS_WHOM}"
        ) from None
    except OSError:
        return []
    try:
        with maps_file as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) < 6 or int(parts[2], 16) != 0:
                    continue
                path = parts[5].rstrip("\n")
                if _LIBRARY.search(path) and path not in found:
                    found[path] = int(parts[0].split("-")[0], 16)
    except (OSError, ValueError):
        return []
    return list(found.items())


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no answer"
