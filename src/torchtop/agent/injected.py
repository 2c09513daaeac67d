"""`start(request)`: the agent that `torchtop attach --inject` loads into a running job.

The outside (attach/inject.py) makes the job run `bootstrap/inject_boot.py` at a safe point; the
boot calls `start` with the path of `RUN/inject/request-<N>.json`. `start`:

- answers with `RUN/inject/ack-<N>.json` (written whole, by rename) in every case it can, and
  installs nothing when the job already runs `torchtop run`'s agent (`already_agent`) or has
  not imported torch;
- takes everything it needs from the request, never from `TORCHTOP_*` variables, and writes
  none into the job's environment (the job's children must not start agents of their own);
- stops an agent an earlier injection left in first (`replaced`): one set of hooks, one
  thread, never two;
- prints one line on the job's stderr, the only output it ever makes;
- starts one daemon thread, `torchtop-inject`, that polls every `POLL_S` for
  `RUN/inject/detach` or the attacher's end, then has every hook undone
  (`InjectedAgent.finish`) and returns; while the job is idle it does the chores steps
  would (a window request, new settings).

Stdlib only until the job is known to have torch: `injected_agent` (which imports it) is
imported only then. Nothing here raises into the job; what fails is an ack's `error` or a note.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchtop.agent.children import signals_to_the_main_thread
from torchtop.agent.config import (
    DEFAULT_WINDOW_EVERY_S,
    DEFAULT_WINDOW_FIRST_STEP,
    DEFAULT_WINDOW_STEPS,
    AgentConfig,
)
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout

if TYPE_CHECKING:
    from torchtop.agent.injected_agent import InjectedAgent

POLL_S = 0.25
# The thread waits this long for the main thread to undo the hooks, then leaves it queued.
FINISH_WAIT_S = 0.2
ANNOUNCEMENT = (
    "torchtop: agent loaded into PID {pid} by torchtop attach --inject (PID {attacher}); "
    "it unloads when that attach ends"
)

_current: InjectedAgent | None = None
_fork_forwarder_registered = False


@dataclass(frozen=True)
class Request:
    run_dir: Path
    attacher_pid: int
    number: int
    config: AgentConfig


def read_request(path: Path) -> Request:
    """The request file; optional `window_*` keys tune the windows (defaults as under run)."""
    table: Any = json.loads(path.read_text(encoding="utf-8"))
    run_dir = Path(table["run_dir"])
    config = AgentConfig(
        run_dir,
        window_every_s=float(table.get("window_every_s", DEFAULT_WINDOW_EVERY_S)),
        window_steps=max(1, int(table.get("window_steps", DEFAULT_WINDOW_STEPS))),
        window_first_step=int(table.get("window_first_step", DEFAULT_WINDOW_FIRST_STEP)),
    )
    return Request(run_dir, int(table["attacher_pid"]), int(table["number"]), config)


def start(request_path: str | os.PathLike[str]) -> None:
    """Load the agent as the request says; never raises (the job is not ours to break)."""
    try:
        request = read_request(Path(request_path))
    except Exception:  # nowhere to answer: the outside times out on the missing ack
        return
    _answer(request)


def _answer(request: Request) -> None:
    try:
        answer = _start(request)
    except Exception as exc:
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    if answer is None:
        return
    _acknowledge(request, **answer)
    if answer.get("ok") and not answer.get("already_agent"):
        _announce(request)


def _start(request: Request) -> dict[str, Any] | None:
    """The ack's answer; None when the start was put off to the next safe bytecode."""
    hooks = sys.modules.get("torchtop.agent.hooks")
    if hooks is not None and getattr(hooks, "_agent", None) is not None:
        return {"ok": True, "already_agent": True}
    if "torch" not in sys.modules:
        return {"ok": False, "error": "the job has not imported torch; nothing to hook"}
    from torchtop.agent.injected_agent import post_hooks_running

    # Inside the optimizer's hook loop its hook dict must not change: an agent already in is
    # replaced at its next safe point (its hooks call us there); a first one puts its
    # optimizer hook in then.
    in_hook_loop = post_hooks_running(sys._getframe())
    current = _current
    if in_hook_loop and current is not None:
        current.main_work.append(lambda: _answer(request))
        return None
    replaced = stop_current()
    _new_agent(request, optimizer_hook_now=not in_hook_loop)
    return {"ok": True, "replaced": replaced}


def _new_agent(request: Request, optimizer_hook_now: bool) -> None:
    global _current
    from torchtop.agent.agent import open_sink
    from torchtop.agent.identity import read_identity
    from torchtop.agent.injected_agent import THREAD_NAME, InjectedAgent

    torch_version = str(getattr(sys.modules["torch"], "__version__", ""))
    identity = read_identity(os.environ)  # RANK and friends: the job's own, read only
    sink = open_sink(request.run_dir, identity.pid, hold_until_step=False)
    agent = InjectedAgent(request.config, identity, sink, number=request.number)
    agent.start(torch_version, [])
    agent.install(optimizer_hook_now)
    atexit.register(agent.close, "exit")
    _register_fork_forwarder()
    _current = agent
    thread = threading.Thread(target=_watch, args=(agent, request), name=THREAD_NAME, daemon=True)
    agent.thread = thread
    thread.start()


def stop_current() -> bool:
    """Stop the agent an earlier injection left (on the main thread); whether there was one."""
    global _current
    agent, _current = _current, None
    if agent is None:
        return False
    agent.stopping.set()
    atexit.unregister(agent.close)
    agent.finish()
    thread = agent.thread
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout=2 * POLL_S)
    return True


def _watch(agent: InjectedAgent, request: Request) -> None:
    """The agent's one thread: detach when asked or when the attacher is gone."""
    global _current
    signals_to_the_main_thread()
    detach = RunLayout(request.run_dir).inject_detach
    while not agent.stopping.wait(POLL_S):
        if detach.exists() or not _alive(request.attacher_pid):
            atexit.unregister(agent.close)
            if _current is agent:
                _current = None
            agent.detach_from_thread(FINISH_WAIT_S)
            return
        agent.idle_chores()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (EPERM) is still alive
        return True
    return True


def _register_fork_forwarder() -> None:
    """`os.register_at_fork` cannot be undone: one forwarder per process, a no-op when no
    injected agent is in."""
    global _fork_forwarder_registered
    if not _fork_forwarder_registered:
        os.register_at_fork(after_in_child=_forked)
        _fork_forwarder_registered = True


def _forked() -> None:
    """In a forked child (a DataLoader worker): the agent's thread is not there, and its lock
    may have been held by it at the fork."""
    agent = _current
    if agent is not None and agent.active:
        agent.lock = threading.RLock()
        agent.thread = None
        agent.forked()


def _acknowledge(request: Request, **answer: Any) -> None:
    torch = sys.modules.get("torch")
    ack = {
        "pid": os.getpid(),
        "number": request.number,
        "ok": False,
        "replaced": False,
        "already_agent": False,
        "error": None,
        "python": sys.version.split()[0],
        "torch": getattr(torch, "__version__", None) if torch is not None else None,
    }
    ack.update(answer)
    try:
        write_once(RunLayout(request.run_dir).inject_ack(request.number), ack)
    except Exception:  # the outside times out on the missing ack and says so
        return


def _announce(request: Request) -> None:
    line = ANNOUNCEMENT.format(pid=os.getpid(), attacher=request.attacher_pid)
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # the job closed its stderr
        return
