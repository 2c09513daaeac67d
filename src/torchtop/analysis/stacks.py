"""Where a sampled thread is: the places of a stack, and the share of samples in each.

`classify_stack` names where one thread is (in the DataLoader, backward, the optimizer, a
collective, a device sync, forward, idle, other Python) from its frames alone, and `attribute`
turns recent `stacks` records (`collectors.stacks`) into the share of the main threads' samples
in each place: the verdict for a job that runs no agent (`torchtop attach`).
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Iterable, Sequence

from torchtop.runs.records import StackFrame, StacksSample

# Where a thread can be, most specific first when frames of several are on one stack.
PLACES = ("sync", "collective", "optimizer", "dataloader", "backward", "forward", "python", "idle")
_COLLECTIVE_CALLS = {
    "wait", "all_reduce", "barrier", "monitored_barrier", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "reduce_scatter", "reduce_scatter_tensor", "broadcast", "reduce",
    "all_to_all", "all_to_all_single", "gather", "scatter", "send", "recv", "broadcast_object_list",
}  # fmt: skip
# `.item()`, `.cpu()`, `.tolist()` wait for the device inside C++; py-spy shows only the caller's
# line, so the caller's source line is how they are recognised.
_SYNC_CALLS = (".item()", ".cpu()", ".tolist()", ".numpy()", "synchronize(")


def classify_stack(
    frames: Sequence[StackFrame],
    active: bool | None = None,
    source_line: Callable[[str, int], str] = linecache.getline,
) -> str:
    """One of PLACES for a thread whose `frames` ({function, file, line}) are innermost first.

    The innermost frame that belongs to a known place decides, so a collective inside the
    optimizer is "collective"; forward counts only when no backward frame is below it
    (activation checkpointing re-runs forward inside backward). An inactive thread in no known
    place is "idle" (sleeping, waiting on a lock), an active one "python".
    """
    forward = False
    for index, frame in enumerate(frames):
        place = _place(frame, innermost=index == 0, source_line=source_line)
        if place == "forward":
            forward = True
        elif place is not None:
            return place
    if forward:
        return "forward"
    return "idle" if active is False else "python"


def _place(
    frame: StackFrame, innermost: bool, source_line: Callable[[str, int], str]
) -> str | None:
    path = "/" + (frame.file or "").replace("\\", "/")
    function = (frame.function or "").rsplit(".", 1)[-1]
    if "/torch/cuda/" in path and function == "synchronize":
        return "sync"
    if "/torch/distributed/" in path and function in _COLLECTIVE_CALLS:
        return "collective"
    if "/torch/optim/" in path:
        return "optimizer"
    if "/torch/utils/data/" in path:
        return "dataloader"
    if "/torch/autograd/" in path or (
        path.endswith("/torch/_tensor.py") and function == "backward"
    ):
        return "backward"
    if path.endswith("/torch/nn/modules/module.py") and function in ("_call_impl", "__call__"):
        return "forward"
    if innermost and "/torch/" not in path and frame.line is not None:
        line = source_line(path[1:], frame.line)
        if any(call in line for call in _SYNC_CALLS):
            return "sync"
    return None


def attribute(records: Iterable[StacksSample]) -> dict[str, float]:
    """Share (0-1) of the main threads' samples in each place, over these `stacks` records.

    A main thread is the thread whose tid is its process's pid, in a process whose role is
    "main". Places never seen are left out; no samples at all gives {}.
    """
    counts: dict[str, int] = {}
    for record in records:
        for process in record.processes:
            if process.role != "main":
                continue
            for thread in process.threads:
                if thread.tid == process.pid:
                    place = classify_stack(thread.frames, thread.active)
                    counts[place] = counts.get(place, 0) + 1
    total = sum(counts.values())
    return {place: count / total for place, count in sorted(counts.items())} if total else {}
