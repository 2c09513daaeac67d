"""The frame patterns of `rules/_frames.toml`: what a thread does inside libtorch, as data.

A native stack dump names compiled frames (`at::native::_to_copy`, `c10d::Reducer::...`, a bare
address in libgomp). The patterns that turn them into places (copy, collective, sync, OpenMP
barrier, the autograd engine) live beside the rules, each with its source and an example, so a
new library's symbols are a data change. The file is checked as it loads, like a rule file:
every key, every regular expression, every place, and every example must match its own
pattern; a problem is one line naming the file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from torchtop.analysis.datafile import compile_pattern, read_toml
from torchtop.diagnosis.rules import default_rules_dir, shipped_rules_dir
from torchtop.diagnosis.schema import RuleError, decode

FRAMES_FILE = "_frames.toml"
OP = "op"
"""Inside an operator, as the profiler records one: the place of the `op` patterns."""
BETWEEN = "between-ops"
"""A thread in compiled code that no pattern names: outside every operator (bindings,
deallocation, the autograd engine's own loop)."""


class ExampleFrame(msgspec.Struct, forbid_unknown_fields=True):
    function: str
    library: str = ""


class PatternEntry(msgspec.Struct, forbid_unknown_fields=True):
    place: str
    function: str
    source: str
    example: ExampleFrame
    library: str | None = None
    innermost: bool = False
    not_under: str | None = None


class ThreadEntry(msgspec.Struct, forbid_unknown_fields=True):
    role: str
    name: str
    source: str
    example: str


class FramesFile(msgspec.Struct, forbid_unknown_fields=True):
    places: list[str]
    patterns: list[PatternEntry]
    runtime_libraries: str = "^$"
    threads: list[ThreadEntry] = []


class Pattern(msgspec.Struct, frozen=True):
    place: str
    function: re.Pattern[str]
    library: re.Pattern[str] | None
    innermost: bool
    not_under: re.Pattern[str] | None = None
    """A frame it must not run under (outer to it): a copy inside another operator's
    implementation (addmm copying its bias into the output) is that operator's."""

    def matches(self, function: str, library: str | None) -> bool:
        if self.function.search(function) is None:
            return False
        return self.library is None or self.library.search(library or "") is not None


class FramePatterns(msgspec.Struct, frozen=True):
    places: tuple[str, ...]
    """Most telling first: where several match one stack, the first listed wins."""
    patterns: tuple[Pattern, ...]
    communication_threads: re.Pattern[str] | None
    """The names of OS threads that do a collective's work (gloo's), where there are any."""
    runtime: re.Pattern[str] = re.compile("^$")
    """The interpreter's and the C runtime's libraries: frames that are no operator."""

    def place(self, frames: Sequence[tuple[str, str | None]]) -> str | None:
        """The place of a thread from its compiled frames, (function, library) innermost
        first: one of `places`, `BETWEEN` for compiled code no pattern names, None for none
        (or only the interpreter's and the C runtime's)."""
        if all(self.runtime.search(library or "") is not None for _, library in frames):
            return None
        found = {
            pattern.place
            for index, (function, library) in enumerate(frames)
            for pattern in self.patterns
            if (index == 0 or not pattern.innermost)
            and pattern.matches(function, library)
            and not _under(pattern.not_under, frames[index + 1 :])
        }
        return next((place for place in self.places if place in found), BETWEEN)


def _under(outer: re.Pattern[str] | None, frames: Sequence[tuple[str, str | None]]) -> bool:
    return outer is not None and any(outer.search(function) for function, _ in frames)


def load_frame_patterns(directory: Path | None = None) -> FramePatterns:
    """The patterns of `directory`/_frames.toml (default: the rules folder, or the shipped one
    where `$TORCHTOP_RULES` names a folder of rules without patterns), checked."""
    path = (directory or default_rules_dir()) / FRAMES_FILE
    if directory is None and not path.exists():
        path = shipped_rules_dir() / FRAMES_FILE
    return _load(path)


@functools.cache
def _load(path: Path) -> FramePatterns:
    data = read_toml(path, RuleError)
    entry = decode(path, data, FramesFile)
    patterns = tuple(
        _pattern(path, index, p, entry.places) for index, p in enumerate(entry.patterns)
    )
    names = [_regex(path, f"threads[{i}].name", t.name) for i, t in enumerate(entry.threads)]
    for index, (thread, name) in enumerate(zip(entry.threads, names, strict=True)):
        if thread.role != "communication":
            raise RuleError(f"{path}: threads[{index}].role must be 'communication'")
        if name.search(thread.example) is None:
            raise RuleError(f"{path}: threads[{index}]: example {thread.example!r} does not match")
    joined = "|".join(f"(?:{t.name})" for t in entry.threads)
    return FramePatterns(
        tuple(entry.places),
        patterns,
        re.compile(joined) if joined else None,
        _regex(path, "runtime_libraries", entry.runtime_libraries),
    )


def _pattern(path: Path, index: int, entry: PatternEntry, places: list[str]) -> Pattern:
    where = f"patterns[{index}]"
    if entry.place not in places:
        raise RuleError(f"{path}: {where}.place {entry.place!r} is not one of places {places}")
    library = entry.library
    pattern = Pattern(
        place=entry.place,
        function=_regex(path, f"{where}.function", entry.function),
        library=None if library is None else _regex(path, f"{where}.library", library),
        innermost=entry.innermost,
        not_under=None
        if entry.not_under is None
        else _regex(path, f"{where}.not_under", entry.not_under),
    )
    if not pattern.matches(entry.example.function, entry.example.library):
        example = f"{entry.example.function} ({entry.example.library})"
        raise RuleError(f"{path}: {where}: its example {example} does not match it")
    return pattern


def _regex(path: Path, where: str, text: str) -> re.Pattern[str]:
    return compile_pattern(f"{path}: {where}", text, RuleError)
