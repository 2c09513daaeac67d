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
    """Events dropped at impossible times: negative durations or durations longer than a day,
    timestamps not finite or beyond 2**53 µs (285 years after the epoch)."""
    dropped_malformed: int = 0
    """Events dropped for a field of the wrong type (a list for `args`, text for `ts`, ...)."""
    malformed_fields: tuple[tuple[str, int], ...] = ()
    """`dropped_malformed` by the field of the wrong type (`event`: not a JSON object)."""
    dropped_duplicate: int = 0
    """Events dropped as exact repeats of an earlier one (a trace written more than once)."""
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

    def set_aside_share(self) -> float:
        """The events dropped as malformed or corrupt over those read (duplicates, read twice,
        are not lost evidence)."""
        lost = self.dropped_malformed + self.dropped_corrupt
        return lost / max(self.events_total + self.dropped_malformed, 1)

    def set_aside(self) -> tuple[str, ...]:
        """What was dropped in reading, one line per cause, each naming its count."""
        notes = []
        if self.dropped_malformed:
            fields = ", ".join(f"{name} {count}" for name, count in self.malformed_fields)
            detail = f" ({fields})" if fields else ""
            notes.append(
                f"dropped {self.dropped_malformed} malformed event(s) with a field of the wrong "
                f"type{detail}"
            )
        if self.dropped_corrupt:
            notes.append(
                f"dropped {self.dropped_corrupt} corrupt event(s) at impossible times (a "
                "timestamp not finite or past 2**53 µs, a duration negative or over a day)"
            )
        if self.dropped_duplicate:
            notes.append(
                f"dropped {self.dropped_duplicate} duplicate event(s): the file holds its events "
                "more than once (its steps repeat at the same times); each is counted once"
            )
        return tuple(notes)

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
