"""Text charts as Rich `Text`: the stacked step bar, its legend, sparklines, meters and units.

Pure functions of numbers and a width, so each panel's `render` stays a few lines and the
charts are tested without a terminal. The stacked bar gives cells to categories by largest
remainder, as the text report does, so it is always full width and the two agree cell for cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.text import Text

from torchtop.model.analysis import MetricValue
from torchtop.tui.palette import CATEGORIES, CATEGORY, MUTED

SPARKS = "▁▂▃▄▅▆▇█"
EIGHTHS = " ▏▎▍▌▋▊▉█"


def bar_cells(shares: Mapping[str, float], width: int) -> list[tuple[str, int]]:
    """(category, cells) in bar order; the cells add up to `width` when any share is positive."""
    exact = {c.key: max(shares.get(c.key, 0.0), 0.0) * width for c in CATEGORIES}
    total = sum(exact.values())
    if total <= 0 or width <= 0:
        return []
    exact = {k: v * width / total for k, v in exact.items()}
    counts = {k: int(v) for k, v in exact.items()}
    missing = max(width - sum(counts.values()), 0)
    for key in sorted(exact, key=lambda k: exact[k] - counts[k], reverse=True)[:missing]:
        counts[key] += 1
    return [(c.key, counts[c.key]) for c in CATEGORIES if counts[c.key]]


def stacked_bar(shares: Mapping[str, float], width: int) -> Text:
    """One line: each category's cells in its colour, labelled with its letter and share."""
    text = Text()
    cells = bar_cells(shares, width)
    if not cells:
        return Text("·" * max(width, 0), style=MUTED)
    for key, count in cells:
        category = CATEGORY[key]
        label = f"{category.letter} {shares.get(key, 0.0):.0%}"
        if len(label) > count:
            label = category.letter
        text.append(label[:count].ljust(count), style=f"bold #101010 on {category.colour}")
    return text


def legend(shares: Mapping[str, float], limit: int | None = None) -> Text:
    """`D DataLoader 62%  K kernels 20% ...`, largest first, shares under 0.5% left out."""
    ranked = sorted(
        (c for c in CATEGORIES if shares.get(c.key, 0.0) >= 0.005),
        key=lambda c: shares.get(c.key, 0.0),
        reverse=True,
    )
    text = Text()
    for category in ranked[:limit]:
        if text:
            text.append("  ")
        text.append(category.letter, style=f"bold {category.colour}")
        text.append(f" {category.label} {shares.get(category.key, 0.0):.0%}")
    return text


def fit(values: Sequence[float | None], width: int) -> list[float | None]:
    """At most `width` values: longer series are averaged in equal buckets, oldest first."""
    if width <= 0:
        return []
    if len(values) <= width:
        return list(values)
    out: list[float | None] = []
    for i in range(width):
        bucket = [v for v in values[i * len(values) // width : (i + 1) * len(values) // width]]
        known = [v for v in bucket if v is not None]
        out.append(sum(known) / len(known) if known else None)
    return out


def sparkline(
    values: Sequence[float | None], width: int, top: float | None = None, style: str = ""
) -> Text:
    """Eight-level blocks, right-aligned in `width`; unmeasured points are blanks."""
    points = fit(values, width)
    known = [v for v in points if v is not None]
    ceiling = top if top is not None else max(known, default=0.0)
    chars = []
    for value in points:
        if value is None:
            chars.append(" ")
        elif ceiling <= 0:
            chars.append(SPARKS[0])
        else:
            level = round(max(0.0, min(value / ceiling, 1.0)) * (len(SPARKS) - 1))
            chars.append(SPARKS[level])
    return Text("".join(chars).rjust(width), style=style)


def meter(pct: float | None, width: int, style: str = "") -> Text:
    """A horizontal bar in eighths of a cell for a 0-100 percentage; blank when not measured."""
    if pct is None or width <= 0:
        return Text(" " * max(width, 0))
    eighths = round(max(0.0, min(pct, 100.0)) / 100.0 * width * 8)
    full, part = divmod(eighths, 8)
    body = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return Text(body.ljust(width), style=style)


def rate(bytes_per_s: float | None) -> str:
    """`12.3 MB/s`; `n/a` when not measured."""
    if bytes_per_s is None:
        return "n/a"
    return f"{size(bytes_per_s)}/s"


def size(count: float | None) -> str:
    if count is None:
        return "n/a"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(count) >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def duration(seconds: float | None) -> str:
    """`1:02:03`, or `4:05` under an hour."""
    if seconds is None:
        return "n/a"
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def number(value: object) -> float | None:
    """A measured number, or None (bools and strings are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def metric_text(name: str, value: MetricValue) -> str:
    """A metric as a person reads it: shares and utilisation as %, milliseconds with ms."""
    measured = number(value)
    if value is None:
        return f"{name} n/a"
    if measured is None:
        return f"{name} {value}"
    if name.endswith(("_share", "utilization")):
        return f"{name} {measured:.0%}"
    if name.endswith("_pct"):
        return f"{name} {measured:.0f}%"
    if name.endswith("_ms"):
        return f"{name} {measured:.1f} ms"
    return f"{name} {measured:.3g}" if isinstance(value, float) else f"{name} {value}"
