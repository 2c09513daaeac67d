"""How a child process ended when it could not say so itself: its parent writes its `bye`.

A rank killed by a signal (a SIGKILL, the OOM killer, torchrun's SIGTERM to a job without a
handler) runs no `atexit`, so its journal ends without a `bye` and the run could only call it
"silent". Its parent knows better: the exit status is the parent's to collect. The agent runs
in torchrun too (and in any Python process that starts ranks), so each agent watches its
children: a thread lists them (`/proc/self/task/*/children`) every `LIST_EVERY_S`, and one
thread per child waits in `waitid(WEXITED | WNOWAIT)`, woken at the child's death with its
status WITHOUT reaping it: the job's own `wait` still gets the same status, untouched.

A child that had the agent (its `events/agent-<pid>.jsonl` exists) gets the parent's `bye`
appended, `reason = "seen by parent"`, unless its journal already ends in a `bye` that says the
same: the child is dead, so the file has one writer at a time still. The parent's word wins
(the reader takes the last `bye`): the agent writes its own at Python's exit, and a process can
still die after that, of a SIGABRT in its C++ teardown (gloo, NCCL), with its `exit 0` written.
A child whose own `bye` tells a failure (`exit 1` from an exception) and that its launcher then
stopped mid-teardown (torchrun's SIGTERM to the other ranks of a failed job) ended as its
parent saw it, `signal SIGTERM`, as torchrun's own summary says; the error it raised stays in
its own `bye` (`error`), read apart (`runs.state.ProcessState.error`).
Where waiting is not possible (no `os.waitid`, not Linux) or the job reaped the child
first (`ChildProcessError`: a parent blocked in its own `wait()` may win the wake-up;
torchrun polls every 0.1 s, so it rarely does), nothing is written and the run calls the
rank silent (or takes the agent's own `bye`), as before. `torchtop` itself writes the `bye`
of the job's first process the same way, from its own `wait` (`jobs.job`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path

from torchtop.runs.codec import encode_line
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Bye

LIST_EVERY_S = 0.5
MAX_WATCHED = 256
"""Children waited on at once, at most: one idle thread each."""
TAIL_BYTES = 4096
"""Read from the end of a child's journal to find its last record."""
SEEN_BY_PARENT = "seen by parent"


def watch_children(run_dir: Path) -> threading.Thread | None:
    """Start watching this process's children (a daemon thread); None where it cannot."""
    if not hasattr(os, "waitid") or not Path("/proc/self/task").is_dir():
        return None
    layout = RunLayout(run_dir)
    thread = threading.Thread(
        target=_list_forever, args=(layout,), name="torchtop-children", daemon=True
    )
    thread.start()
    return thread


def children() -> set[int]:
    """This process's children, from every thread's list (a child belongs to the thread that
    started it)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found.update(int(pid) for pid in (task / "children").read_text().split())
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue
    return found


def signals_to_the_main_thread() -> None:
    """Block SIGINT and SIGTERM in the calling agent thread (and the threads it starts): the
    kernel hands a signal sent to the process to any thread that does not block it, and one
    handed to an agent thread leaves the job's main thread asleep in a blocking call, so its
    KeyboardInterrupt, and its own cleanup, wait for that call to end (a graceful stop's grace
    may run out first)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})


def _list_forever(layout: RunLayout) -> None:
    signals_to_the_main_thread()
    watched: set[int] = set()
    lock = threading.Lock()
    me = os.getpid()
    while os.getpid() == me:  # a forked child's copy of this thread does not run; belt and braces
        try:
            new = children() - watched
        except OSError:
            return
        with lock:
            for pid in sorted(new)[: max(MAX_WATCHED - len(watched), 0)]:
                watched.add(pid)
                threading.Thread(
                    target=_wait_for,
                    args=(pid, layout, watched, lock),
                    name=f"torchtop-child-{pid}",
                    daemon=True,
                ).start()
        time.sleep(LIST_EVERY_S)


def _wait_for(pid: int, layout: RunLayout, watched: set[int], lock: threading.Lock) -> None:
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
    except (ChildProcessError, OSError):  # reaped by the job already: status unknown
        info = None
    if info is not None:
        record_end(layout.agent_events(pid), bye_of(info.si_code, info.si_status))
    with lock:
        watched.discard(pid)


def bye_of(code: int, status: int) -> Bye:
    """The `bye` for a child that ended with `waitid`'s `si_code` and `si_status`."""
    bye = Bye(t=time.time(), reason=SEEN_BY_PARENT)
    if code in (os.CLD_KILLED, os.CLD_DUMPED):
        try:
            bye.signal = signal.Signals(status).name
        except ValueError:
            bye.signal = f"signal {status}"
    else:
        bye.exit_code = status
    return bye


def bye_of_returncode(returncode: int) -> Bye:
    """The `bye` for a child whose `Popen.returncode` is `returncode` (-N: signal N)."""
    if returncode < 0:
        return bye_of(os.CLD_KILLED, -returncode)
    return bye_of(os.CLD_EXITED, returncode)


def record_end(journal: Path, bye: Bye) -> bool:
    """Append the parent's `bye` to a dead child's journal, unless it has none or already
    ends in a `bye` that says the same (or is a parent's)."""
    try:
        with journal.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - TAIL_BYTES, 0))
            tail = handle.read()
    except OSError:  # the child never had the agent (or never wrote): not a rank to tell of
        return False
    lines = tail.rstrip(b"\n").rsplit(b"\n", 1)
    if b'"kind":"bye"' in lines[-1] and _agrees(lines[-1], bye):
        return False
    # A child that died mid-line left a torn line: ended first, it reads as one bad line.
    torn = b"\n" if tail and not tail.endswith(b"\n") else b""
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, torn + encode_line(bye))
    finally:
        os.close(fd)
    return True


def _agrees(line: bytes, bye: Bye) -> bool:
    """Whether the `bye` on `line` already tells how the process ended: as `bye` says, or as a
    failure of its own, which a launcher's later stop does not overrule."""
    try:
        said = json.loads(line)
    except ValueError:  # a torn line that happens to name a bye: the parent's goes after it
        return False
    if said.get("reason") == SEEN_BY_PARENT:
        return True
    if isinstance(bye.signal, str):
        return bool(said.get("signal") == bye.signal)
    return said.get("signal") is None and said.get("exit_code") == bye.exit_code
