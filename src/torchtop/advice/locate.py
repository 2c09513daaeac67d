"""Where in the user's own code a code fix belongs: the file, the line, and the line as written.

A code fix is a change only the user can make, so it must point at their script, not at a
template of a typical loop. Two records say where the job spends its steps: the py-spy dumps of
`samples/stacks.jsonl` (live runs) and a trace's `python_function` events (Kineto with
`with_stack=True`). Both give stacks of (file, line), innermost first; `locate` picks one frame
per stack and counts them, weighted by samples or by time:

- a fix about a host sync (`code.avoid_item`): the innermost user frame whose source line reads
  a tensor back (`.item()`, `.cpu()`, `.tolist()`, `.numpy()`, `synchronize(`);
- a fix about host-to-device copies (`code.non_blocking_copy`): the one that calls `.to(` or
  `.cuda(`;
- mixed precision (`amp.dtype`): the one that calls the model or computes the loss, which
  autocast must enclose;
- any other: the innermost user frame, the training loop's line.

A user frame is one outside the standard library, site-packages and the libraries a trace names
by their package (`torch/...`, `transformers/...`). Where nothing fits, the reason says so.
"""

from __future__ import annotations

import linecache
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from torchtop.model.analysis import PythonCalls
from torchtop.model.findings import Finding, Verdict

if TYPE_CHECKING:  # only annotations: analyze of a trace never defines the run folder's Structs
    from torchtop.runs.records import StacksSample

Frame = tuple[str, int]
"""A file and a line number."""
WeightedStack = tuple[Sequence[Frame], float]
"""A stack, innermost frame first, and its weight (1 per sample, or microseconds)."""

_PATTERNS = {
    "code.avoid_item": re.compile(r"\.item\(\)|\.cpu\(\)|\.tolist\(\)|\.numpy\(\)|synchronize\("),
    "code.non_blocking_copy": re.compile(r"\.to\(|\.cuda\("),
    "amp.dtype": re.compile(r"\bloss\w*\s*=|\bmodel\w*\(|\bforward\(|criterion\(|loss_fn\("),
}
_WANTED = {
    "code.avoid_item": "a line of the job's that reads a tensor back to the host",
    "code.non_blocking_copy": "a line of the job's that copies a batch to the device",
    "amp.dtype": "the job's forward pass (a line that calls the model or computes the loss)",
}
_LIBRARY_PATH = re.compile(
    r"(site-packages|dist-packages)[/\\]|[/\\]lib[/\\]python3\.\d+[/\\]|^<|[/\\]torchtop[/\\]"
)
_LIBRARY_PACKAGES = frozenset(
    ("torch", "torchvision", "torchaudio", "torchtext", "functorch", "triton", "transformers",
     "accelerate", "datasets", "huggingface_hub", "tokenizers", "lightning", "pytorch_lightning",
     "lightning_fabric", "timm", "deepspeed", "numpy", "tqdm", "torchtop")
)  # fmt: skip
_DEPTH = 256
"""The deepest stack kept (a cycle of parent ids ends there too)."""
_EVENT_NAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): ")

LineReader = Callable[[str, int], str | None]


@dataclass(frozen=True)
class Location:
    file: str
    line: int
    text: str | None
    """The line as it is in the file now (indentation kept); None where it cannot be read."""

    def __str__(self) -> str:
        """`file:line: source`, or `file:line` alone where the file is not here to read."""
        return f"{self.file}:{self.line}" + (f": {self.text.strip()}" if self.text else "")


def read_line(file: str, line: int) -> str | None:
    """The source line, or None where the file is not on this machine."""
    text = linecache.getline(file, line)
    return text.rstrip("\n") if text.strip() else None


def is_user_file(path: str) -> bool:
    """Whether a frame's file is the user's: not Python's own, nor an installed library's."""
    if _LIBRARY_PATH.search(path):
        return False
    first = path.replace("\\", "/").lstrip("./").split("/", 1)[0]
    module = first.removesuffix(".py")
    if path.startswith("/"):
        return True
    return module not in _LIBRARY_PACKAGES and module not in sys.stdlib_module_names


def locate(
    knob: str, stacks: Iterable[WeightedStack], reader: LineReader = read_line
) -> Location | str:
    """The user line `knob`'s change belongs to, or why none was found."""
    pattern = _PATTERNS.get(knob)
    weights: defaultdict[Frame, float] = defaultdict(float)
    unreadable = False
    # A trace's stacks repeat the same few files and lines thousands of times: each is
    # classified and read once.
    users: dict[str, bool] = {}
    texts: dict[Frame, str | None] = {}
    for frames, weight in stacks:
        for file, line in frames:
            user = users.get(file)
            if user is None:
                user = users[file] = is_user_file(file)
            if not user:
                continue
            if pattern is None:
                weights[(file, line)] += weight
                break
            if (file, line) not in texts:
                texts[(file, line)] = reader(file, line)
            text = texts[(file, line)]
            unreadable = unreadable or text is None
            if text is not None and pattern.search(text):
                weights[(file, line)] += weight
                break
    if not weights:
        wanted = _WANTED.get(knob, "a frame of the job's own code")
        why = "; the job's files are not readable here" if unreadable else ""
        return f"could not locate the line: no stack recorded {wanted}{why}"
    file, line = max(weights, key=weights.__getitem__)
    return Location(file, line, reader(file, line))


def dump_stacks(records: Iterable[StacksSample]) -> list[WeightedStack]:
    """The main threads' stacks of `stacks` records (samples/stacks.jsonl), one sample each."""
    stacks: list[WeightedStack] = []
    for record in records:
        for process in record.processes:
            if process.role != "main":
                continue
            for thread in process.threads:
                frames = [(str(f.file), f.line) for f in thread.frames if f.line is not None]
                if frames:
                    stacks.append((frames, 1.0))
    return stacks


def trace_stacks(events: Iterable[Mapping[str, object]]) -> list[WeightedStack]:
    """The stacks of a trace's `python_function` events: one per innermost event, weighted by
    its duration, its callers found through the `Python parent id` links."""
    calls: list[Call] = []
    for event in events:
        if event.get("cat") != "python_function":
            continue
        args = event.get("args")
        if not isinstance(args, Mapping):
            continue
        ident, parent = args.get("Python id"), args.get("Python parent id")
        if isinstance(ident, int):
            parent = parent if isinstance(parent, int) else None
            dur = event.get("dur")
            dur_us = float(dur) if isinstance(dur, int | float | str) and dur else 0.0
            calls.append((str(event.get("name", "")), dur_us, ident, parent))
    return _call_stacks(calls)


def python_call_stacks(calls: PythonCalls) -> list[WeightedStack]:
    """The stacks of one trace's `python_function` events as the trace reader keeps them
    (`PythonCalls`): the same as `trace_stacks` of the events themselves."""
    names = calls.names
    columns = (calls.name, calls.dur_us, calls.ident, calls.parent)
    rows = zip(*(column.tolist() for column in columns), strict=True)
    stacks = _call_stacks(
        (names[name], dur, ident, None if parent < 0 else parent)
        for name, dur, ident, parent in rows
        if ident >= 0
    )
    # Every step repeats the same stacks: one entry each, weights summed, first seen first
    # (so `locate` weighs and breaks ties as it would on them all).
    merged: defaultdict[tuple[Frame, ...], float] = defaultdict(float)
    for frames, weight in stacks:
        merged[tuple(frames)] += weight
    return list(merged.items())


Call = tuple[str, float, int, int | None]
"""A `python_function` event: its name, duration, `Python id` and `Python parent id`."""


def _call_stacks(calls: Iterable[Call]) -> list[WeightedStack]:
    frames: dict[int, tuple[Frame, int | None, float]] = {}
    parents: set[int] = set()
    parsed: dict[str, Frame | None] = {}  # a trace names the same few functions over and over
    for name, duration, ident, parent in calls:
        if name not in parsed:
            match = _EVENT_NAME.match(name)
            parsed[name] = None if match is None else (match["file"], int(match["line"]))
        frame = parsed[name]
        if frame is None:
            continue
        frames[ident] = (frame, parent, duration)
        if parent is not None:
            parents.add(parent)
    chains = _chains(frames)
    return [
        (list(chains[ident]), duration)
        for ident, (_, _, duration) in frames.items()
        if ident not in parents
    ]


def _chains(frames: Mapping[int, tuple[Frame, int | None, float]]) -> dict[int, tuple[Frame, ...]]:
    """Each call's stack, innermost first and at most `_DEPTH` deep, built once per call from
    its caller's (the leaves of one step share nearly all their callers)."""
    chains: dict[int, tuple[Frame, ...]] = {}
    for ident in frames:
        path: list[int] = []
        node: int | None = ident
        while node is not None and node in frames and node not in chains and len(path) < _DEPTH:
            path.append(node)
            node = frames[node][1]
        tail = chains.get(node, ()) if node is not None else ()
        for call in reversed(path):
            tail = (frames[call][0], *tail[: _DEPTH - 1])
            chains[call] = tail
    return chains


def located_verdict(verdict: Verdict, stacks: Sequence[WeightedStack] | str) -> Verdict:
    """`verdict` with every code fix located in `stacks`, or given `stacks` as the reason
    where the source recorded none."""
    findings = tuple(located(finding, stacks) for finding in verdict.findings)
    return msgspec.structs.replace(verdict, findings=findings)


def located(
    finding: Finding,
    stacks: Sequence[WeightedStack] | str | None,
    places: Mapping[str, str] | None = None,
) -> Finding:
    """`finding` with each code fix's `where`: its line in the job's code, or why not found
    (`stacks` as a string: why no stack was recorded). `places` maps a knob prefix (`ddp.`) to
    the line the job sets those options on, which wins over the stacks: the stacks show where
    the job spends its time, not where it built its model."""
    known = places or {}
    if (stacks is None and not known) or all(fix.apply != "code" for fix in finding.fixes):
        return finding
    fixes = tuple(
        msgspec.structs.replace(fix, where=_where(fix.knob, stacks, known))
        if fix.apply == "code"
        else fix
        for fix in finding.fixes
    )
    return msgspec.structs.replace(finding, fixes=fixes)


def _where(
    knob: str, stacks: Sequence[WeightedStack] | str | None, places: Mapping[str, str]
) -> str | None:
    place = next((line for prefix, line in places.items() if knob.startswith(prefix)), None)
    if place is not None:
        return place
    if stacks is None:
        return None
    return stacks if isinstance(stacks, str) else str(locate(knob, stacks))
