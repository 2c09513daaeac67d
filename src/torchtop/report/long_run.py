"""The long run in the JSON report: the `timeline` section, and the contract's named fields of
a long-run finding (`bytes_per_step` and `seconds_to_limit` of memory growth, `period_steps`,
`period_s` and `share_lost` of periodic stalls), taken from its evidence."""

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
