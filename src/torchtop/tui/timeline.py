"""A bounded history of the whole run: step rate and step-time breakdown, one point per tick.

The dashboard runs for hours, so the history cannot grow with it, and dropping the oldest
points would hide the change worth seeing (the job before and after a relaunch). Instead, when
`capacity` points are held, neighbours are merged in pairs and each point then covers twice as
many ticks: memory stays fixed and the chart always spans the whole run, at a coarser grain the
longer it goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

DEFAULT_CAPACITY = 512


@dataclass(frozen=True)
class Point:
    elapsed_s: float
    steps_per_s: float | None
    shares: dict[str, float]
    marker: str = ""
    """Non-empty where something changed in this point (`relaunch`: new training processes)."""


def merge(points: Sequence[Point]) -> Point:
    """One point standing for several: means of what was measured, the newest time, any marker."""
    rates = [p.steps_per_s for p in points if p.steps_per_s is not None]
    keys = {k for p in points for k in p.shares}
    shares = {k: sum(p.shares.get(k, 0.0) for p in points) / len(points) for k in sorted(keys)}
    marker = next((p.marker for p in points if p.marker), "")
    return Point(
        elapsed_s=points[-1].elapsed_s,
        steps_per_s=sum(rates) / len(rates) if rates else None,
        shares=shares,
        marker=marker,
    )


@dataclass
class Timeline:
    capacity: int = DEFAULT_CAPACITY
    points: list[Point] = field(default_factory=list)
    span: int = 1
    """Ticks per stored point."""
    _pending: list[Point] = field(default_factory=list)

    def add(self, point: Point) -> None:
        self._pending.append(point)
        if len(self._pending) < self.span:
            return
        self.points.append(merge(self._pending))
        self._pending.clear()
        if len(self.points) >= self.capacity:
            self.points = [merge(self.points[i : i + 2]) for i in range(0, len(self.points), 2)]
            self.span *= 2

    def series(self) -> tuple[Point, ...]:
        """Every point, the partly filled newest one included."""
        if self._pending:
            return (*self.points, merge(self._pending))
        return tuple(self.points)
