"""The report's communication additions: message sizes per kind and each rank's overlap.

Kept apart from `contract` so the JSON of one subject stays in one short module; every figure
is null where it was not measured, never 0.
"""

from __future__ import annotations

from torchtop.model.analysis import MessageSizes, RankAnalysis


def messages_json(sizes: MessageSizes) -> dict[str, object]:
    return {
        "count": sizes.count,
        "total_bytes": sizes.total_bytes,
        "median_bytes": sizes.median_bytes,
        "largest_bytes": sizes.largest_bytes,
        "group_size": sizes.group_size,
    }


OVERLAP_METRICS = (
    "comm_time_ms",
    "comm_hidden_ms",
    "comm_exposed_ms",
    "comm_exposed_share",
    "allreduce_exposed_ms",
    "backward_compute_ms",
    "allreduce_exposed_vs_backward",
)


def overlap_json(analysis: RankAnalysis) -> dict[str, object]:
    """A rank's `communication_overlap` (only where it communicated): per step, ms."""
    metrics = analysis.metrics
    if metrics.get("comm_time_ms") is None:
        return {}
    return {
        "communication_overlap": {
            name.removeprefix("comm_"): _round(metrics.get(name)) for name in OVERLAP_METRICS
        }
    }


def _round(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return round(float(value), 4)


def text_lines(job: RankAnalysis) -> list[str]:
    """The text report's lines under `collectives`: sizes and bandwidth per kind that has
    them, then how much of the collectives' time per step was hidden and exposed."""
    lines = [
        f"  {s.kind} messages: median {_bytes(s.sizes.median_bytes)}, largest "
        f"{_bytes(s.sizes.largest_bytes)}, {_bytes(s.sizes.total_bytes)} in {s.sizes.count}"
        + (f" · busbw {s.sizes.busbw_gbps:.1f} GB/s" if s.sizes.busbw_gbps is not None else "")
        for s in job.communication
        if s.sizes is not None
    ]
    m = job.metrics
    total, hidden, exposed = (
        m.get(k) for k in ("comm_time_ms", "comm_hidden_ms", "comm_exposed_ms")
    )
    share = m.get("comm_exposed_share")
    if isinstance(total, float) and isinstance(hidden, float) and isinstance(exposed, float):
        line = f"  overlap: {total:.1f} ms of collectives a step, {hidden:.1f} ms hidden, "
        line += f"{exposed:.1f} ms exposed"
        line += f" ({share:.0%} of the step)" if isinstance(share, float) else ""
        lines.append(line)
    reduce, backward = m.get("allreduce_exposed_ms"), m.get("backward_compute_ms")
    if isinstance(reduce, float) and isinstance(backward, float) and backward > 0:
        verdict = "could hide it" if reduce < backward else "cannot hide it"
        lines.append(
            f"  all-reduce exposed {reduce:.1f} ms a step against {backward:.1f} ms of "
            f"backward compute: overlap {verdict}"
        )
    return lines


def _bytes(count: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count:.0f} B"
