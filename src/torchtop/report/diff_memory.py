"""`diff`'s memory: the peaks `analyze` prints, compared device by device.

The figures are the report's own MEMORY sections (`memory[]`: each device's peak allocated, and
on a job the agent watched, the host's peak resident set), so `diff` never says "no peak" of a
report that prints one. A trace analysed alone has no `memory[]`; its device peak from the
`[memory]` events (`metrics.memory_peak_bytes`, the fullest CUDA device) stands in there.
"""

from __future__ import annotations

from torchtop.model.diff import DiffSection, Document
from torchtop.report.memory import size_words

TRACE_PEAK = "cuda"
"""The row of a trace's `metrics.memory_peak_bytes`: a CUDA device, the fullest one."""
HOW_TO_RECORD = (
    "a trace recorded with profile_memory=True, or a run that `torchtop run` watched, has one"
)


def memory_peaks(report: Document) -> dict[str, float]:
    """Each place's peak bytes, named as `analyze` heads its MEMORY sections."""
    peaks: dict[str, float] = {}
    for device in report.get("memory") or []:
        peak = device.get("peak_allocated_bytes")
        if peak is not None:
            where = device["device"] if device.get("rank") is None else (
                f"{device['device']} (rank {device['rank']})"
            )  # fmt: skip
            peaks[where] = max(peak, peaks.get(where, 0.0))
    trace_peak = report.get("metrics", {}).get("memory_peak_bytes")
    if not peaks and trace_peak is not None:
        peaks[TRACE_PEAK] = trace_peak
    return peaks


def memory_change(a: Document, b: Document) -> Document:
    """A row per place either side measured; the first measured on both heads the change
    (`a_peak_bytes`, `b_peak_bytes`, `change_bytes`, `ratio`)."""
    peaks_a, peaks_b = memory_peaks(a), memory_peaks(b)
    rows = [_row(w, peaks_a.get(w), peaks_b.get(w)) for w in dict.fromkeys([*peaks_a, *peaks_b])]
    both = [row for row in rows if row["change_bytes"] is not None]
    if not both:
        return {"available": False, "why": _why_not(peaks_a, peaks_b), "devices": rows}
    return {"available": True, **both[0], "devices": rows}


def _row(where: str, peak_a: float | None, peak_b: float | None) -> Document:
    row: Document = {"device": where, "a_peak_bytes": peak_a, "b_peak_bytes": peak_b}
    if peak_a is None or peak_b is None:
        return {**row, "change_bytes": None, "ratio": None}
    return {**row, "change_bytes": peak_b - peak_a, "ratio": peak_b / peak_a if peak_a else None}


def _why_not(peaks_a: dict[str, float], peaks_b: dict[str, float]) -> str:
    missing = " and ".join(side for side, peaks in (("A", peaks_a), ("B", peaks_b)) if not peaks)
    if missing:
        return f"no memory peak in {missing} ({HOW_TO_RECORD})"
    return f"no place measured in both: A's peaks are of {', '.join(peaks_a)}, B's of " + (
        ", ".join(peaks_b)
    )


def memory_section(memory: Document) -> DiffSection:
    """`MEMORY PEAK`: a row per place, as `analyze` words it (a host's resident set)."""
    rows = tuple(
        (
            f"{row['device']} peak " + ("resident set" if row["device"] == "host" else "allocated"),
            size_words(row["a_peak_bytes"]),
            size_words(row["b_peak_bytes"]),
            _change_words(row["change_bytes"]),
        )
        for row in memory.get("devices", [])
    )
    if not memory["available"] and not rows:
        return DiffSection("memory peak", note=memory["why"])
    note = None if memory["available"] else memory["why"]
    return DiffSection("memory peak", ("", "A", "B", "change"), rows, note)


def _change_words(change: float | None) -> str:
    """Signed, in analyze's units: `+1.2 MiB`, `-0.3 GiB`; `0 B` for none."""
    if change is None:
        return "-"
    return ("+" if change > 0 else "-" if change < 0 else "") + size_words(abs(change))
