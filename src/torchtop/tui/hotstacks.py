"""The hottest Python frames of the job, from its recent py-spy dumps, the user's code first.

Each dump is one sample of each thread worth counting (a main thread, or any thread py-spy saw
running; never torchtop's own threads in the job). Each sample counts once, so the shares are
of one whole, the samples counted, and add up to 100% at most: at the innermost frame of the
user's code on its stack (anything not in site-packages, the standard library or torchtop's
agent), the line of the user's own code the time is spent under; a stack with no user frame
(a library's own thread) at its innermost frame. Under each line, the library frames the time
actually goes to are kept for its details.

A sample taken while the job imports (a `<frozen importlib...>` frame on the stack: `import
torch` at start, or a module torch loads lazily at its first optimizer step) is set aside and
counted apart: loading code is not training, and it would put `import torch` at the top of a
job that has started to train.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torchtop.runs.records import StackFrame, StacksSample

DUMPS_COUNTED = 10
INSIDE_KEPT = 3
"""Library frames named in a line's details, most frequent first."""
_LIBRARY = re.compile(
    r"(site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python3\.\d+[/\\]|^<|[/\\]torchtop[/\\]agent[/\\]"
)
_IMPORTING = "<frozen importlib"
_OWN_THREAD = "torchtop-"
"""The prefix of the threads torchtop's agent starts inside the job."""

FrameKey = tuple[str, str, int | None]


@dataclass(frozen=True)
class HotFrame:
    function: str
    file: str
    line: int | None
    share: float
    """Of the counted samples (`HotStacks.samples`), each counted at one frame."""
    user: bool
    inside: tuple[tuple[str, str, float], ...] = ()
    """Where this line's samples were innermost, in the library: (function, where, share of
    this line's samples), most first."""

    @property
    def where(self) -> str:
        return short_where(self.file, self.line)


@dataclass(frozen=True)
class HotStacks:
    """The hottest frames, and the whole their shares are of."""

    frames: tuple[HotFrame, ...] = ()
    samples: int = 0
    """Samples counted: 100% of the shares."""
    importing: int = 0
    """Samples taken while the job imported, set aside."""


def short_where(path: str, line: int | None) -> str:
    parts = path.replace("\\", "/").split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else path
    return f"{short}:{line}" if line is not None else short


def is_user_code(path: str) -> bool:
    return _LIBRARY.search(path) is None


def is_importing(frames: Sequence[StackFrame]) -> bool:
    return any((f.file or "").startswith(_IMPORTING) for f in frames)


def counted_threads(record: StacksSample) -> Iterable[list[StackFrame]]:
    """The stacks of one dump worth counting: main threads (by tid: py-spy names no thread of
    a process that has not imported `threading`), and threads py-spy saw running, other than
    torchtop's own."""
    for process in record.processes:
        for thread in process.threads:
            if (thread.name or "").startswith(_OWN_THREAD) or not thread.frames:
                continue
            if thread.active or thread.name == "MainThread" or thread.tid == process.pid:
                yield thread.frames


def hot_frames(records: Sequence[StacksSample], limit: int = 12) -> HotStacks:
    """The hottest frames over the last `DUMPS_COUNTED` dumps of `records` (oldest first)."""
    at: Counter[FrameKey] = Counter()
    inside: dict[FrameKey, Counter[FrameKey]] = {}
    importing = 0
    for record in records[-DUMPS_COUNTED:]:
        for frames in counted_threads(record):
            if is_importing(frames):
                importing += 1
                continue
            keys = [_key(f) for f in frames]
            place = next((k for k in keys if is_user_code(k[1])), keys[0])
            at[place] += 1
            if keys[0] != place:
                inside.setdefault(place, Counter())[keys[0]] += 1
    samples = sum(at.values())
    ranked = sorted(
        at.items(), key=lambda kv: (not is_user_code(kv[0][1]), -kv[1], kv[0][1], kv[0][2] or 0)
    )
    hot = tuple(
        HotFrame(*key, share=count / samples, user=is_user_code(key[1]),
                 inside=_inside(inside.get(key), count))
        for key, count in ranked[:limit]
    )  # fmt: skip
    return HotStacks(hot, samples, importing)


def _inside(under: Counter[FrameKey] | None, count: int) -> tuple[tuple[str, str, float], ...]:
    if under is None:
        return ()
    return tuple(
        (function, short_where(path, line), n / count)
        for (function, path, line), n in under.most_common(INSIDE_KEPT)
    )


def _key(frame: StackFrame) -> FrameKey:
    return (frame.function or "?", frame.file or "?", frame.line)
