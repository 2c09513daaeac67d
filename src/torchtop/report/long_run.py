"""The long run in the report: the JSON `timeline` section, the contract's named fields of a
long-run finding (`bytes_per_step` and `seconds_to_limit` of memory growth, `period_steps`,
`period_s` and `share_lost` of periodic stalls), taken from its evidence, and the timeline in
the text report as a few sparklines, one character a bucket."""

from __future__ import annotations

import msgspec

from torchtop.model.findings import Finding
from torchtop.model.timeline import Timeline

FIELD_SUFFIXES = {
    "_growth_bytes_per_step": "bytes_per_step",
    "_growth_bytes_per_hour": "bytes_per_hour",
    "_growth_seconds_to_limit": "seconds_to_limit",
    "stall_period_steps": "period_steps",
    "stall_period_s": "period_s",
    "stall_share_lost": "share_lost",
    "drift_fall_share": "fall_share",
}
"""An evidence name ending so, and the finding's field it is also written as."""


def long_run_fields(finding: Finding) -> dict[str, object]:
    """The contract's named fields of a long-run finding; {} for any other."""
    fields: dict[str, object] = {}
    for name, value in finding.evidence.items():
        field = next((f for end, f in FIELD_SUFFIXES.items() if name.endswith(end)), None)
        if field is not None:
            fields[field] = value
    return fields


def timeline_json(timeline: Timeline) -> dict[str, object]:
    """Every bucket; its memory figures left out where not measured, its rate null where no
    step ended in it."""
    buckets = [
        {
            k: _rounded(v)
            for k, v in msgspec.structs.asdict(b).items()
            if v is not None or k == "steps_per_s"
        }
        for b in timeline.buckets
    ]
    return {
        "started_at": timeline.started_at,
        "bucket_s": round(timeline.bucket_s, 3),
        "buckets": buckets,
    }


def _rounded(value: object) -> object:
    return round(value, 4) if isinstance(value, float) else value


SPARKS = "▁▂▃▄▅▆▇█"
MEMORY_ROWS = (
    ("rss_bytes", "rss"),
    ("cuda_allocated_bytes", "allocated"),
    ("cuda_reserved_bytes", "reserved"),
)


def timeline_text(timeline: Timeline | None) -> list[str]:
    """Steps/s, the stalls and memory over the run, a line each; [] without a timeline."""
    if timeline is None or len(timeline.buckets) < 2:
        return []
    buckets = timeline.buckets
    span = buckets[-1].end_s
    rates = [b.steps_per_s for b in buckets]
    lines = [
        f"OVER THE RUN  {span:.0f} s, {timeline.bucket_s:.3g} s a column",
        f"  {'steps/s':<10}{_sparks(rates)}  {_range(rates, '{:.3g}')}",
    ]
    if any(b.stalls for b in buckets):
        marks = "".join("!" if b.stalls else " " for b in buckets)
        lines.append(f"  {'stalls':<10}{marks}  {sum(b.stalls for b in buckets)}")
    for field, label in MEMORY_ROWS:
        values = [getattr(b, field) for b in buckets]
        if any(v is not None for v in values):
            mib = [None if v is None else v / 2**20 for v in values]
            lines.append(f"  {label:<10}{_sparks(mib)}  {_range(mib, '{:.0f} MiB')}")
    return [*lines, ""]


def _sparks(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    low, high = min(known), max(known)
    steps = len(SPARKS) - 1
    return "".join(
        " " if v is None else SPARKS[round((v - low) / (high - low) * steps) if high > low else 0]
        for v in values
    )


def _range(values: list[float | None], form: str) -> str:
    """The first and last measured values: where the run began and where it ended up."""
    known = [v for v in values if v is not None]
    return f"{form.format(known[0])} -> {form.format(known[-1])}"
