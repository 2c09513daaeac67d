"""The hottest Python frames of the job, from its recent py-spy dumps, the user's code first.

Each dump is one sample of each thread worth counting (a main thread, or any thread py-spy saw
running). The user's code (anything not in site-packages, the standard library or torchtop's
agent) is ranked by how often each of its frames is the innermost user frame on the stack: the
line of the user's own code the time is spent under. Then come the library frames where the
time actually goes: the innermost frames, by how often they are innermost.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torchtop.runs.records import StackFrame, StacksSample

DUMPS_COUNTED = 10
_LIBRARY = re.compile(
    r"(site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python3\.\d+[/\\]|^<|[/\\]torchtop[/\\]agent[/\\]"
)

FrameKey = tuple[str, str, int | None]


@dataclass(frozen=True)
class HotFrame:
    function: str
    file: str
    line: int | None
    share: float
    """Of the counted samples: innermost user frame (user code), or innermost frame (library)."""
    user: bool

    @property
    def where(self) -> str:
        parts = self.file.replace("\\", "/").split("/")
        short = "/".join(parts[-2:]) if len(parts) > 1 else self.file
        return f"{short}:{self.line}" if self.line is not None else short


def is_user_code(path: str) -> bool:
    return _LIBRARY.search(path) is None


def counted_threads(record: StacksSample) -> Iterable[list[StackFrame]]:
    """The stacks of one dump worth counting: main threads, and threads py-spy saw running."""
    for process in record.processes:
        for thread in process.threads:
            if thread.frames and (thread.active or thread.name == "MainThread"):
                yield thread.frames


def hot_frames(records: Sequence[StacksSample], limit: int = 12) -> tuple[HotFrame, ...]:
    """The hottest frames over the last `DUMPS_COUNTED` dumps of `records` (oldest first)."""
    user: Counter[FrameKey] = Counter()
    library: Counter[FrameKey] = Counter()
    samples = 0
    for record in records[-DUMPS_COUNTED:]:
        for frames in counted_threads(record):
            samples += 1
            keys = [_key(f) for f in frames]
            mine = next((k for k in keys if is_user_code(k[1])), None)
            if mine is not None:
                user[mine] += 1
            if not is_user_code(keys[0][1]):
                library[keys[0]] += 1
    if not samples:
        return ()
    ranked = [
        HotFrame(*key, share=count / samples, user=is_user)
        for is_user, counts in ((True, user), (False, library))
        for key, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][1], kv[0][2] or 0))
    ]
    return tuple(ranked[:limit])


def _key(frame: StackFrame) -> FrameKey:
    return (frame.function or "?", frame.file or "?", frame.line)
