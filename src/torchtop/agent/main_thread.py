"""`call_soon(fn)`: run `fn` on the job's main thread at its next safe point, from any thread.

The injected agent must do some things on the main thread: a profiler window can only be
stopped on the thread that started it (stopped from another, torch says nothing and keeps
recording), and the optimizer's global hook dict may only change while the main thread is not
iterating it. Python's own mechanism for this is a pending call (`Py_AddPendingCall`, the one
the injection itself rides on): the main thread runs it between two bytecodes, with the GIL
held, never in the middle of C code. It is reached through ctypes, so this module is stdlib only;
where ctypes or the symbol is missing, `call_soon` says False and the caller does without.

The C callback lives as long as the process: a call queued by an agent that has since gone may
still run. An exception in `fn` is dropped (it must never reach the job); a Ctrl-C that arrives
while `fn` runs is handed back to the job's main thread (`interrupt_main`), not swallowed.
"""

from __future__ import annotations

import _thread
from collections import deque
from collections.abc import Callable
from typing import Any

_queue: deque[Callable[[], None]] = deque()


def _run_one(_argument: object) -> int:
    try:
        fn = _queue.popleft()
    except IndexError:
        return 0
    try:
        fn()
    except KeyboardInterrupt:
        _thread.interrupt_main()
    except BaseException:  # the job must never see the agent's failure
        return 0
    return 0


def _bind() -> tuple[Any, Any, Any] | None:
    try:
        import ctypes

        callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_run_one)
        # Our own handle on the interpreter's symbols: setting argtypes on the shared
        # `ctypes.pythonapi` would change it for the job too.
        add = ctypes.PyDLL(None).Py_AddPendingCall
        add.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        add.restype = ctypes.c_int
        return add, ctypes.cast(callback, ctypes.c_void_p), callback
    except Exception:
        return None


_bound = _bind()


def available() -> bool:
    return _bound is not None


def call_soon(fn: Callable[[], None]) -> bool:
    """Queue `fn` for the main thread; False when it cannot be queued (it then never runs)."""
    if _bound is None:
        return False
    add, pointer = _bound[0], _bound[1]
    _queue.append(fn)
    try:
        queued = bool(add(pointer, None) == 0)
    except Exception:
        queued = False
    if not queued:
        _queue.remove(fn)
    return queued
