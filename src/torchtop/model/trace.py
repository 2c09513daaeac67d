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
    """The bytes after the last whole event that were read but formed no whole event."""
    repaired: bool = False
    notes: tuple[str, ...] = msgspec.field(default_factory=tuple)
    file_bytes: int | None = None
    """A truncated file's size (for a `.gz`, compressed), all of it read; None otherwise."""
    json_bytes: int | None = None
    """A truncated file's JSON read (for a `.gz`, inflated); None otherwise."""
    gzip_cut: bool = False
    """The `.gz` ends before its gzip trailer, the part that records the full size."""
    last_event_s: float | None = None
    """A truncated file's last event read: its start, in seconds from the trace's first."""

    def truncation(self) -> str | None:
        """What a truncated file lost, in words that claim only what the file tells."""
        if not self.truncated:
            return None
        if self.gzip_cut:
            where = (
                f"the .gz ends after {_size(self.file_bytes)} compressed "
                f"({_size(self.json_bytes)} of JSON) with no gzip trailer, so its full size is "
                "unknown"
            )
        else:
            where = f"the JSON ends after {_size(self.json_bytes)}, inside its event array"
        at = (
            f", the last starting {self.last_event_s:.3f} s into the trace"
            if self.last_event_s is not None
            else ""
        )
        return (
            f"truncated: {where}; analysed its {self.events_total:,} whole events{at}; "
            "everything after them in the file is lost"
        )


def _size(count: int | None) -> str:
    if count is None:
        return "an unknown size"
    if count >= 1_000_000:
        return f"{count / 1e6:.1f} MB"
    if count >= 1_000:
        return f"{count / 1e3:.0f} KB"
    return f"{count} bytes"
