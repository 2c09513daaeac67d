"""The report's `memory` and `modules` sections: JSON (docs/report.md), text and Markdown.

Both appear only where the traces recorded what they need (`[memory]` events; module calls).
A report without module information says, in one line of text, how to record it.
"""

from __future__ import annotations

from torchtop.model.analysis import RankAnalysis
from torchtop.model.memory import (
    HOW_TO_RECORD,
    Allocator,
    DeviceMemory,
    ModuleTime,
    ModuleTree,
    OutOfMemory,
)

ASSUMPTION = "activations grow with the batch; weights and optimizer state do not"
TEXT_MODULE_DEPTH = 3
TEXT_ALLOCATORS = 5


def memory_json(devices: tuple[DeviceMemory, ...]) -> list[dict[str, object]]:
    """One entry per device and rank; byte counts are bytes, the curve [s, allocated,
    reserved]."""
    return [
        {
            "device": d.device,
            "rank": d.rank,
            "peak_allocated_bytes": d.peak_allocated_bytes,
            "peak_reserved_bytes": d.peak_reserved_bytes,
            "peak_step": d.peak_step,
            "peak_phase": d.peak_phase,
            "capacity_bytes": d.capacity_bytes,
            "headroom_bytes": d.headroom_bytes,
            "persistent_bytes": d.persistent_bytes,
            "batch_factor_max": _round(d.batch_factor_max),
            "assumption": ASSUMPTION if d.batch_factor_max is not None else None,
            "steps": [
                {
                    "step": s.number,
                    "peak_allocated_bytes": s.peak_allocated_bytes,
                    "phase": s.phase,
                    "peak_into_step_share": _round(s.peak_into_step_share),
                }
                for s in d.steps
            ],
            "top_allocators": [_allocator_json(a) for a in d.top_allocators],
            "curve": [list(point) for point in d.curve],
            "source": d.source,
            "last_peak_bytes": d.last_peak_bytes,
            "nvml_used_peak_bytes": d.nvml_used_peak_bytes,
        }
        for d in devices
    ]


def _allocator_json(allocator: Allocator) -> dict[str, object]:
    return {
        "name": allocator.name,
        "count": allocator.count,
        "bytes": allocator.bytes,
        "alive_at_peak_bytes": allocator.alive_at_peak_bytes,
    }


def out_of_memory_json(found: OutOfMemory) -> dict[str, object]:
    """`out_of_memory`: PyTorch's words, the device, the last peak measured on it and the
    operators holding it (`analysis.oom`)."""
    return {
        "message": found.message,
        "device": found.device,
        "last_peak_bytes": found.last_peak_bytes,
        "last_peak_of": found.last_peak_of,
        "top_allocators": [_allocator_json(a) for a in found.top_allocators],
    }


def modules_json(tree: ModuleTree) -> dict[str, object]:
    """`{"steps": N, "tree": [...]}`: times are ms per step (means over the N steps); `source`,
    and for the agent's timings `first_step`, `device` and `clock`."""
    document: dict[str, object] = {
        "steps": tree.steps,
        "tree": [_module_json(m) for m in tree.roots],
    }
    document["source"] = tree.source
    if tree.source == "agent":
        document.update(first_step=tree.first_step, device=tree.device, clock="host")
    return document


LIVE_MODULES_WORDS = "live, forward hooks: host wall time per forward call; backward not timed"


def _module_json(module: ModuleTime) -> dict[str, object]:
    return {
        "name": module.name,
        "calls": module.calls,
        "forward_ms": _round(module.forward_ms),
        "forward_self_ms": _round(module.forward_self_ms),
        "backward_ms": _round(module.backward_ms),
        "backward_self_ms": _round(module.backward_self_ms),
        "children": [_module_json(c) for c in module.children],
    }


def memory_text(job: RankAnalysis) -> list[str]:
    lines: list[str] = []
    for d in job.memory:
        lines += ["", f"MEMORY {_where(d)}", f"  {_peak_words(d)}"]
        if d.batch_factor_max is not None:
            lines.append(f"  {_headroom_words(d)}")
        lines += [
            f"  {size_words(a.alive_at_peak_bytes):>9} alive at peak  {size_words(a.bytes):>9} in "
            f"{a.count}x  {a.name}"
            for a in d.top_allocators[:TEXT_ALLOCATORS]
        ]
    return lines


def modules_text(job: RankAnalysis, source_kind: str) -> list[str]:
    tree = job.modules
    if tree is None:
        return ["", HOW_TO_RECORD] if source_kind == "trace" else []
    lines = ["", f"MODULES (ms per step over {tree.steps} steps: forward self/total, backward)"]
    if tree.source == "agent":
        lines.append(f"  {_live_words(tree)}")
    for root in tree.roots:
        lines += _module_lines(root, 0, tree.steps)
    return lines


def _module_lines(module: ModuleTime, depth: int, steps: int) -> list[str]:
    back = f"{module.backward_ms:9.2f}" if module.backward_ms is not None else "        -"
    per_step = module.calls / steps
    lines = [
        f"  {module.forward_self_ms:9.2f} {module.forward_ms:9.2f} {back}  "
        f"{'  ' * depth}{module.name}" + (f" x{per_step:g}" if per_step > 1 else "")
    ]
    if depth + 1 < TEXT_MODULE_DEPTH:
        for child in module.children:
            lines += _module_lines(child, depth + 1, steps)
    return lines


def memory_markdown(job: RankAnalysis) -> list[str]:
    if not job.memory:
        return []
    lines = ["## Memory", "", "| device | peak allocated | reserved | step | phase | headroom |"]
    lines.append("|---|---:|---:|---:|---|---:|")
    for d in job.memory:
        lines.append(
            f"| {_where(d)} | {size_words(d.peak_allocated_bytes)} "
            f"| {size_words(d.peak_reserved_bytes)} "
            f"| {d.peak_step if d.peak_step is not None else '-'} | {d.peak_phase or '-'} "
            f"| {size_words(d.headroom_bytes)} |"
        )
    lines.append("")
    lines += [f"- {_where(d)}: {_headroom_words(d)}" for d in job.memory if d.batch_factor_max]
    return [*lines, ""]


def modules_markdown(job: RankAnalysis) -> list[str]:
    tree = job.modules
    if tree is None:
        return []
    lines = ["## Modules", "", f"ms per step over {tree.steps} steps.", ""]
    if tree.source == "agent":
        lines[-1:-1] = [f"{_live_words(tree)}.", ""]
    lines += [
        "| module | forward self | forward | backward self | backward |",
        "|---|" + "---:|" * 4,
    ]
    rows: list[tuple[int, ModuleTime]] = []
    for root in tree.roots:
        _walk(root, 0, rows)
    for depth, m in rows:
        lines.append(
            f"| {'&nbsp;' * 2 * depth}{m.name} | {m.forward_self_ms:.2f} | {m.forward_ms:.2f} "
            f"| {_ms(m.backward_self_ms)} | {_ms(m.backward_ms)} |"
        )
    return [*lines, ""]


def _live_words(tree: ModuleTree) -> str:
    """What the agent's timings are, exactly (a CUDA job's are its launches, not its kernels)."""
    last = (tree.first_step or 0) + tree.steps - 1
    words = f"{LIVE_MODULES_WORDS}; steps {tree.first_step} to {last}"
    if tree.device and tree.device.startswith("cuda"):
        words += f"; on {tree.device} this is launch time, not kernel time"
    return words


def _walk(module: ModuleTime, depth: int, rows: list[tuple[int, ModuleTime]]) -> None:
    rows.append((depth, module))
    if depth + 1 < TEXT_MODULE_DEPTH:
        for child in module.children:
            _walk(child, depth + 1, rows)


def _where(d: DeviceMemory) -> str:
    return d.device if d.rank is None else f"{d.device} (rank {d.rank})"


def _peak_words(d: DeviceMemory) -> str:
    what = "resident set" if d.device == "host" else "allocated"
    words = f"peak {size_words(d.peak_allocated_bytes)} {what}"
    if d.peak_reserved_bytes is not None:
        words += f", {size_words(d.peak_reserved_bytes)} reserved"
    if d.peak_step is not None:
        words += f", in step {d.peak_step}" + (f"'s {d.peak_phase}" if d.peak_phase else "")
    if d.capacity_bytes:
        words += (
            f"; {d.peak_allocated_bytes / d.capacity_bytes:.0%} of {size_words(d.capacity_bytes)}"
        )
    if d.nvml_used_peak_bytes is not None:
        words += f"; NVML saw {size_words(d.nvml_used_peak_bytes)} used"
    return words


def _headroom_words(d: DeviceMemory) -> str:
    factor = d.batch_factor_max or 0.0
    fits = f"{factor:.1f}x" if factor < 100 else "over 100x"
    return (
        f"headroom {size_words(d.headroom_bytes)}: a batch up to {fits} the current one is "
        f"predicted to fit ({ASSUMPTION}; {size_words(d.persistent_bytes)} stays)"
    )


def size_words(count: float | int | None) -> str:
    if count is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
