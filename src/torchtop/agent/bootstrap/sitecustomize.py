"""Start-up hook that puts the torchtop agent into every Python process of a `torchtop run`.

`torchtop run` prepends this folder to `PYTHONPATH`, so Python imports this module at start-up
(`site` imports the first `sitecustomize` on `sys.path`) in the job and in every Python process
it starts: torchrun's workers, spawned DataLoader workers, subprocesses. It:

- does nothing unless `TORCHTOP_RUN_DIR` is set, and never imports torch;
- reads the CPUs the process may use before anything in it can pin its main thread;
- runs the `sitecustomize` that this one hides (the venv's or the system's), so it is not lost;
- puts a finder first on `sys.meta_path` that, for the modules named in `_WATCHED` only, wraps
  their loader's `exec_module`, so that right after the job imports `torch` the agent attaches
  (`torchtop.agent.hooks.attach()`), and right after it imports `argparse` the script's options
  start being recorded (a script may parse its command line before importing torch). A
  process that never imports torch never loads the agent and writes nothing;
- tells a KeyboardInterrupt that torchtop's own stop caused in one line, not a traceback
  (`_stop_told`): a `--for` stop, Ctrl-C or `q` must not read as the job's crash.

Whatever fails here is written once as a `note` in the process's event file and the job goes on.
It runs in every Python process the command starts, so it imports only `os` and `sys` (both
already loaded at start-up) until it has work to do: anything else is imported where used.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType
    from typing import Any

RUN_DIR_ENV = "TORCHTOP_RUN_DIR"
HERE = os.path.dirname(os.path.realpath(__file__))
# This file is torchtop/agent/bootstrap/sitecustomize.py: the package is two folders up.
PACKAGE_DIR = os.path.dirname(os.path.dirname(HERE))


def _note(message: str) -> None:
    """Write a `note` straight to this process's event file (the agent may not have loaded)."""
    try:
        import json
        import time

        events = os.path.join(os.environ[RUN_DIR_ENV], "events")
        os.makedirs(events, exist_ok=True)
        line = json.dumps({"kind": "note", "t": time.time(), "message": message}) + "\n"
        path = os.path.join(events, f"agent-{os.getpid()}.jsonl")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except Exception:  # nowhere to report to; the job matters more
        return


def _import_torchtop(name: str) -> ModuleType:
    """`torchtop.<...>` from the torchtop that owns this file, not whatever the job has."""
    import importlib
    import importlib.util

    if "torchtop" not in sys.modules:
        init = os.path.join(PACKAGE_DIR, "__init__.py")
        spec = importlib.util.spec_from_file_location(
            "torchtop", init, submodule_search_locations=[PACKAGE_DIR]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load torchtop from {PACKAGE_DIR}")
        package = importlib.util.module_from_spec(spec)
        sys.modules["torchtop"] = package
        try:
            spec.loader.exec_module(package)
        except BaseException:
            del sys.modules["torchtop"]
            raise
    return importlib.import_module(name)


def _attach_agent(torch: ModuleType) -> None:
    _import_torchtop("torchtop.agent.settings").remember_start_cpus(_START_CPUS)
    _import_torchtop("torchtop.agent.hooks").attach()


def _watch_argparse(argparse: ModuleType) -> None:
    _import_torchtop("torchtop.agent.cli_options").install(argparse)


_WATCHED: dict[str, Callable[[ModuleType], None]] = {
    "torch": _attach_agent,
    "argparse": _watch_argparse,
}


class _ImportWatcher:
    """A meta path finder that finds nothing itself: it wraps the real loader of a few modules."""

    def __init__(self, watched: dict[str, Callable[[ModuleType], None]]) -> None:
        self._watched = dict(watched)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        callback = self._watched.pop(fullname, None)
        if callback is None:
            return None
        if not self._watched and self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = self._real_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        # A class as loader (builtin, frozen) is shared by many modules: leave it alone.
        if loader is not None and not isinstance(loader, type) and hasattr(loader, "exec_module"):
            _wrap_exec_module(loader, callback)
        return spec

    def _real_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> ModuleSpec | None:
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec: ModuleSpec | None = finder.find_spec(fullname, path, target)
            if spec is not None:
                return spec
        return None


def _wrap_exec_module(loader: Any, callback: Callable[[ModuleType], None]) -> None:
    original = loader.exec_module

    def exec_module(module: ModuleType) -> None:
        original(module)  # the job's import: its errors are the job's, untouched
        try:
            callback(module)
        except Exception as exc:
            _note(f"torchtop agent failed to start: {type(exc).__name__}: {exc}")

    loader.exec_module = exec_module


def _chain_to_hidden_sitecustomize() -> None:
    """Run the `sitecustomize` that would have been imported were this folder not first."""
    from importlib.machinery import PathFinder

    others = [p for p in sys.path if os.path.realpath(p or os.curdir) != HERE]
    spec = PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _start_cpus() -> set[int] | None:
    """The CPUs this process may use, read now: once torch has loaded OpenMP with
    `OMP_PROC_BIND` set, the main thread is pinned to one of them."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return None


_START_CPUS: set[int] | None = None


STOP_REQUEST = ("requests", "stop")
"""Under the run folder: touched by torchtop as it starts to stop the job (`RunLayout.stop_request`,
which this module cannot import)."""


def _stop_told(previous: Callable[..., Any]) -> Callable[..., Any]:
    """`sys.excepthook`, but for a KeyboardInterrupt that torchtop's stop caused (it touched
    `RUN/requests/stop` before its SIGINT): one line, not a traceback that reads as a crash.
    Only the printing changes: the job's `finally` blocks have run by now, and the process still
    ends by SIGINT. Any other exception, or a KeyboardInterrupt of the job's own (Ctrl-C in its
    terminal, no stop asked), goes to `previous` whole."""

    def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        if issubclass(kind, KeyboardInterrupt) and _stop_requested():
            try:
                sys.stderr.write("stopped by torchtop (SIGINT)\n")
                sys.stderr.flush()
            except Exception:  # a closed stderr: nothing to say it on
                pass
            return
        previous(kind, value, tb)

    return hook


def _stop_requested() -> bool:
    run_dir = os.environ.get(RUN_DIR_ENV)
    return run_dir is not None and os.path.exists(os.path.join(run_dir, *STOP_REQUEST))


def _start() -> None:
    global _START_CPUS
    if os.environ.get(RUN_DIR_ENV):
        _START_CPUS = _start_cpus()
        sys.meta_path.insert(0, _ImportWatcher(_WATCHED))
        sys.excepthook = _stop_told(sys.excepthook)
    _chain_to_hidden_sitecustomize()


_start()
