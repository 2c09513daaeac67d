"""Where a long-run finding happens in the job's code, and what kind of work it is, from the
main thread's stacks sampled during it (a stall's steps, the steps memory grew over).

The place is the innermost frame of the job's own code (not Python's, not a library's) that
most of those stacks share, named by its function and line: `save_checkpoint (train.py:31)`.
The cause is read from every frame of the stacks, library ones too: a checkpoint writes
through `torch.save` (torch/serialization.py) or torch.distributed.checkpoint, an evaluation
runs in a function named so, a DataLoader that starts its workers runs in torch/utils/data,
and logging goes through the logging module, print, TensorBoard or wandb.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from torchtop.advice.locate import is_user_file
from torchtop.model.report import StackLine

Stack = tuple[StackLine, ...]

CAUSES: dict[str, re.Pattern[str]] = {
    "checkpoint": re.compile(
        r"(?i)checkpoint|\bsave|save_|torch/serialization\.py|torch/distributed/checkpoint"
    ),
    "evaluation": re.compile(r"(?i)\beval|evaluat|validat|_eval"),
    "dataloader": re.compile(r"torch/utils/data/"),
    "logging": re.compile(r"(?i)\blog|logging/|\bprint\b|tensorboard|wandb|summary_writer"),
}
"""Searched in `function file` of each frame, in this order: the first that a frame matches
names the stack's cause."""
MOST = 0.5
"""A place or a cause holds where at least this share of the stacks show it."""


def user_frame(stack: Stack) -> StackLine | None:
    """The innermost frame of the job's own code."""
    return next((f for f in stack if f.file and is_user_file(f.file)), None)


def place(stacks: Sequence[Stack]) -> str | None:
    """The job's line most of `stacks` are in, as `function (file:line)`; None without one."""
    frames = Counter(f for f in map(user_frame, stacks) if f is not None)
    if not frames:
        return None
    frame, seen = frames.most_common(1)[0]
    if seen < MOST * len(stacks):
        return None
    return f"{frame.function or '?'} ({frame.file}:{frame.line})"


def stack_cause(stack: Stack) -> str | None:
    for name, pattern in CAUSES.items():
        if any(pattern.search(f"{f.function or ''} {f.file or ''}") for f in stack):
            return name
    return None


def cause(stacks: Sequence[Stack]) -> str | None:
    """The kind of work most of `stacks` do (one of `CAUSES`), or None."""
    causes = Counter(c for c in map(stack_cause, stacks) if c is not None)
    if not causes:
        return None
    name, seen = causes.most_common(1)[0]
    return name if seen >= MOST * len(stacks) else None
