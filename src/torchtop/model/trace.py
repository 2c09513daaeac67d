"""What a trace file says about itself: its origin, its devices, what was lost reading it."""

from __future__ import annotations

import msgspec


class DeviceInfo(msgspec.Struct, frozen=True):
    """One GPU as `deviceProperties` describes it."""

    index: int
    name: str
    total_memory_bytes: int | None = None
    compute_major: int | None = None
    compute_minor: int | None = None
    sm_count: int | None = None


class TraceInfo(msgspec.Struct, frozen=True):
    """Identity and reading notes of one trace file."""

    path: str
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    events_total: int = 0
    dropped_corrupt: int = 0
    """Events dropped as impossible: negative durations or durations longer than a day."""
    dropped_malformed: int = 0
    truncated: bool = False
    lost_bytes: int = 0
    repaired: bool = False
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)
