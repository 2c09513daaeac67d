"""`diff`'s changes as sections of rows: the same words for the terminal text, Markdown and
the side-by-side screen, each of which only lays them out."""

from __future__ import annotations

from pathlib import PurePath

from torchtop.model.diff import DiffSection, Document
from torchtop.report.diff_cause_text import moved_section, noise_note, settings_section
from torchtop.report.diff_efficiency import efficiency_section
from torchtop.report.diff_memory import memory_section

TOP_ROWS = 10
NAME_WIDTH = 48


def diff_sections(changes: Document, top: int = TOP_ROWS) -> list[DiffSection]:
    """The settings that differ first, then the steps (with the noise judgement) and where the
    time moved, then the figures."""
    return [
        settings_section(changes),
        steps_section(changes),
        moved_section(changes),
        verdict_section(changes["verdict"]),
        breakdown_section(changes["breakdown"]),
        names_section(changes["operators"], "operators", top),
        names_section(changes["kernels"], "kernels", top),
        memory_section(changes["memory"]),
        communication_section(changes["communication"]),
        efficiency_section(changes["efficiency"]),
    ]


def inputs_lines(changes: Document) -> list[str]:
    inputs = changes["inputs"]
    return [
        f"{which}  {side['path']} ({side['kind']}{', JSON report' if side['json_report'] else ''})"
        for which, side in (("A", inputs["a"]), ("B", inputs["b"]))
    ]


def steps_section(changes: Document) -> DiffSection:
    steps = changes["steps"]
    a, b = steps["a"], steps["b"]
    rate = steps["steps_per_s_ratio"]
    said = []
    if rate is not None and rate != 1.0:
        said.append(f"B is {abs(rate - 1.0):.1%} {'faster' if rate > 1.0 else 'slower'} than A")
    if "noise" in changes:
        said.append(noise_note(changes["noise"]))
    note = "\n".join(said) or None
    return DiffSection(
        "steps",
        ("", "A", "B", "B/A"),
        (
            (
                "step time (mean)",
                _ms(a["mean_ms"]),
                _ms(b["mean_ms"]),
                _ratio(steps["mean_ms_ratio"]),
            ),
            ("steps/s", _num(a["steps_per_s"]), _num(b["steps_per_s"]), _ratio(rate)),
            ("steps counted", _num(a["count"]), _num(b["count"]), ""),
        ),
        note,
    )


def verdict_section(verdict: Document) -> DiffSection:
    parts = []
    if verdict["findings_new"]:
        parts.append("new findings: " + ", ".join(verdict["findings_new"]))
    if verdict["findings_gone"]:
        parts.append("gone: " + ", ".join(verdict["findings_gone"]))
    row = (
        "bottleneck",
        _verdict(verdict["a"], verdict["a_confidence"]),
        _verdict(verdict["b"], verdict["b_confidence"]),
        "changed" if verdict["changed"] else "same",
    )
    return DiffSection("verdict", ("", "A", "B", ""), (row,), "; ".join(parts) or None)


def breakdown_section(breakdown: Document) -> DiffSection:
    rows = tuple(
        (key, _share(v["a"]), _share(v["b"]), _points(v["change"])) for key, v in breakdown.items()
    )
    return DiffSection("breakdown (share of step time)", ("category", "A", "B", "change"), rows)


def names_section(names: Document, kind: str, top: int) -> DiffSection:
    title = f"{kind} that changed most"
    if not names["available"]:
        return DiffSection(title, note=names["why"])
    key = names["ranked_by"]
    unit = "self ms/step" if key == "self_ms_per_step" else "ms/step"
    rows = tuple(
        (
            _short(row["name"]),
            _figure(row["a"], key),
            _figure(row["b"], key),
            f"{row['change'].get(key, 0.0):+.3f}",
            f"{_figure(row['a'], 'count_per_step', '.4g')} -> "
            f"{_figure(row['b'], 'count_per_step', '.4g')}",
            row["status"] if row["status"] != "both" else "",
        )
        for row in names["rows"][:top]
    )
    steps = names["steps"]
    note = (
        f"{len(names['new'])} new, {len(names['gone'])} gone, {len(names['rows'])} names; "
        f"per step over A's {steps['a']} and B's {steps['b']} profiled steps"
    )
    header = (kind[:-1], f"A {unit}", f"B {unit}", "change", "calls/step", "")
    return DiffSection(title, header, rows, note)


def communication_section(comm: Document) -> DiffSection:
    share = comm["share"]
    rows = [("share of step", _share(share["a"]), _share(share["b"]), _points(share["change"]))]
    for kind, v in comm.get("kinds", {}).items():
        rows.append((kind, _total_ms(v["a"]), _total_ms(v["b"]), f"{v['change_ms']:+.3f} ms"))
    return DiffSection("communication", ("", "A", "B", "change"), tuple(rows), comm.get("why"))


def render_diff_text(changes: Document) -> str:
    lines = ["torchtop diff", *(f"  {line}" for line in inputs_lines(changes)), ""]
    for section in diff_sections(changes):
        lines.append(section.title.upper())
        lines += [f"  {line}" for line in _aligned(section)]
        if section.note:
            lines += [f"  {line}" for line in section.note.splitlines()]
        lines.append("")
    return "\n".join(lines)


def render_diff_markdown(changes: Document) -> str:
    lines = ["# torchtop diff", "", *(f"- {line}" for line in inputs_lines(changes)), ""]
    for section in diff_sections(changes):
        lines += [f"## {section.title[0].upper()}{section.title[1:]}", ""]
        if section.rows:
            lines.append("| " + " | ".join(section.header) + " |")
            left, right = section.left, len(section.header) - section.left
            lines.append("|" + "|".join(["---"] * left + ["---:"] * right) + "|")
            lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in section.rows]
            lines.append("")
        for line in (section.note or "").splitlines():
            lines += [line, ""]
    return "\n".join(lines)


def _aligned(section: DiffSection) -> list[str]:
    if not section.rows:
        return []
    table = [section.header, *section.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(section.header))]
    return [
        "  ".join(
            cell.ljust(widths[i]) if i < section.left else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in table
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _short(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def _figure(side: Document | None, key: str, spec: str = ".3f") -> str:
    if side is None or side.get(key) is None:
        return "-"
    return format(side[key], spec)


def _verdict(bottleneck: str | None, confidence: float | None) -> str:
    if bottleneck is None:
        return "-"
    return bottleneck if confidence is None else f"{bottleneck} ({confidence:.2f})"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _points(change: float | None) -> str:
    """A change of share in percentage points."""
    return "-" if change is None else f"{change * 100:+.1f} pts"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _total_ms(stat: Document | None) -> str:
    return "-" if stat is None else f"{stat['total_ms']:.3f} ms ({stat['count']}x)"


def source_name(path: str) -> str:
    """The last part of a path given, for a short header."""
    return PurePath(path).name or path
