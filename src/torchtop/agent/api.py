"""`torchtop.step()` and `torchtop.step_context()`: mark step ends where hooks cannot see them.

The agent finds steps by itself through optimizer step hooks; a loop with no optimizer
(inference, evaluation, a hand-written update) calls `torchtop.step()` once per step, or wraps
the step in `with torchtop.step_context():`. Once a process calls either, its optimizer hooks
stop counting, so a loop that has both is not counted twice.

Stdlib only and a no-op without the agent: a script can call these whether or not it runs
under `torchtop run`, and importing them never imports torch.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

_handler: Callable[[], None] | None = None


def step() -> None:
    """Mark the end of one step (the next one starts now)."""
    handler = _handler
    if handler is not None:
        handler()


class step_context:
    """`with torchtop.step_context(): ...` ends a step when the block completes normally.

    A block left by an exception (a skipped batch) does not count as a step.
    """

    def __enter__(self) -> step_context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            step()


def set_step_handler(handler: Callable[[], None] | None) -> None:
    """Called by the agent when it attaches (and with None when it leaves)."""
    global _handler
    _handler = handler
