"""The code `torchtop attach --inject` makes a running job execute: it loads the agent.

The job runs this file's source as
`exec(compile(source, BOOT, "exec"), {"__name__": "__torchtop_inject__", "REQUEST": path})`,
on its main thread at a safe point (a pending call through gdb, or `sys.remote_exec` on 3.14+).
So it binds nothing in the job's namespaces, imports nothing of torchtop at its top, and:

- does nothing when REQUEST is gone (the outside deletes a request it gave up on, so a pending
  call that runs late is a no-op);
- loads torchtop from the request's `package_dir` by file path, as `sitecustomize` does, not
  from the job's `sys.path` (the job's environment may have another torchtop, or none);
- calls `torchtop.agent.injected.start(REQUEST)`, which answers with the ack;
- never raises and never prints a traceback: what fails before `start` can answer is written
  as a failed ack, if even that can be written.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType


def _boot(request_path: str) -> None:
    import json
    import os

    if not os.path.exists(request_path):
        return
    try:
        with open(request_path, encoding="utf-8") as file:
            request = json.load(file)
        package_dir = str(request["package_dir"])
        injected = _import_torchtop(package_dir, "torchtop.agent.injected")
    except Exception as exc:
        _fail(request_path, exc)
        return
    injected.start(request_path)


def _import_torchtop(package_dir: str, name: str) -> ModuleType:
    """`torchtop.<...>` from `package_dir`; a torchtop the job already imported is kept."""
    import importlib
    import importlib.util
    import os
    import sys

    if "torchtop" not in sys.modules:
        init = os.path.join(package_dir, "__init__.py")
        spec = importlib.util.spec_from_file_location(
            "torchtop", init, submodule_search_locations=[package_dir]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load torchtop from {package_dir}")
        package = importlib.util.module_from_spec(spec)
        sys.modules["torchtop"] = package
        try:
            spec.loader.exec_module(package)
        except BaseException:
            del sys.modules["torchtop"]
            raise
    return importlib.import_module(name)


def _fail(request_path: str, exc: BaseException) -> None:
    """A failed ack beside the request: `ack-<N>.json` for `request-<N>.json`."""
    import json
    import os
    import sys

    try:
        folder, name = os.path.split(request_path)
        number = int(name[len("request-") : -len(".json")])
        ack = {
            "pid": os.getpid(),
            "number": number,
            "ok": False,
            "replaced": False,
            "already_agent": False,
            "error": f"the agent could not load: {type(exc).__name__}: {exc}".splitlines()[0],
            "python": sys.version.split()[0],
            "torch": getattr(sys.modules.get("torch"), "__version__", None),
        }
        final = os.path.join(folder, f"ack-{number}.json")
        temporary = os.path.join(folder, f".ack-{number}.{os.getpid()}.tmp")
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(ack, file)
        os.replace(temporary, final)
    except Exception:  # nowhere to answer: the outside times out and says so
        return


try:  # noqa: SIM105 - no import for it: this runs inside the job
    _boot(REQUEST)  # type: ignore[name-defined]  # noqa: F821 - given by the exec's globals
except BaseException:  # the job's own exceptions are not ours to raise into it
    pass
