"""torchtop: top for PyTorch training. Where each step's time goes, the bottleneck, the fix.

`torchtop.step()` and `with torchtop.step_context():` mark steps for loops without an
optimizer; they do nothing unless the job runs under `torchtop run`.

`torchtop.analyze`, `diff`, `load_report`, `compare` and `Report` are the Python API
(docs/api.md), the CLI's own path. They are imported on first use (`__getattr__`), so importing
torchtop stays cheap inside a training job and never imports torch, pandas, numpy or textual.
"""

from __future__ import annotations

from torchtop.agent.api import step, step_context

# Not `typing.TYPE_CHECKING`: importing `typing` (and `re` with it) would triple the cost of
# `import torchtop` inside a training job; mypy and ruff read this constant the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchtop.api.analyzing import analyze
    from torchtop.api.comparing import compare
    from torchtop.api.diffing import Diff, diff
    from torchtop.api.report import Report, load_report

__version__ = "0.1.0"
__all__ = [
    "Diff",
    "Report",
    "__version__",
    "analyze",
    "compare",
    "diff",
    "load_report",
    "step",
    "step_context",
]

_LAZY = {
    "analyze": "torchtop.api.analyzing",
    "compare": "torchtop.api.comparing",
    "diff": "torchtop.api.diffing",
    "Diff": "torchtop.api.diffing",
    "load_report": "torchtop.api.report",
    "Report": "torchtop.api.report",
}


def __getattr__(name: str) -> object:
    """The API's names, imported when first asked for (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchtop' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
