"""The labelled corpus of docs/verdicts.md: its rows, and what `analyze` says of each trace now.

docs/verdicts.md is the one source of truth: one table row per trace, with the verdict a
performance engineer would accept and why. The test reads the rows and checks every verdict
and predicted gain against a fresh analysis; `python -m tests.diagnosis.verdict_corpus`
prints the measured columns of every row (breakdown, verdict, gain, twins' measured speedup)
as they are now, for updating the table when a trace or the model changes.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import SHARED, analyze_json

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "verdicts.md"
SHARED_PREFIX = "../shared/traces/"
GAIN_TOLERANCE = 0.02
"""Relative: the traces are fixed files, so only float rounding may move a predicted gain."""


@dataclass(frozen=True)
class Row:
    path: str
    verdict: str
    predicted_gain: float | None
    measured: float | None
    reason: str

    @property
    def file(self) -> Path:
        if self.path.startswith(SHARED_PREFIX):
            return SHARED / self.path.removeprefix(SHARED_PREFIX)
        return REPO / self.path

    @property
    def twin(self) -> Path | None:
        """The fixed twin: the same worker under `after/` for a `twins/<name>/before/` trace,
        under `..._num_workers_4/` for a `..._num_workers_0/` one (the shared ResNet-50 pairs)."""
        folder = self.file.parent
        if "/twins/" in self.path and folder.name == "before":
            fixed = folder.parent / "after"
        elif folder.name.endswith("num_workers_0"):
            fixed = folder.with_name(folder.name.removesuffix("0") + "4")
        else:
            return None
        worker = self.file.name.split(".")[0]
        [after] = sorted(fixed.glob(f"{worker}.*.json*"))
        return after


def rows(table: Path = TABLE) -> list[Row]:
    """The corpus rows: every table line whose first cell is a trace path in backticks."""
    found = []
    for line in table.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`([^`]+\.json(?:\.gz)?)`", cells[0]) if len(cells) == 6 else None
        if match:
            verdict = cells[2].strip("`")
            found.append(
                Row(match[1], verdict, _gain(cells[3]), _gain(cells[4].split(" ")[0]), cells[5])
            )
    return found


def _gain(cell: str) -> float | None:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)x", cell.strip())
    return float(match[1]) if match else None


def measure(row: Row) -> dict[str, Any]:
    """The row's columns as a fresh analysis gives them."""
    report = analyze_json(row.file)
    shares = sorted(report["breakdown"].items(), key=lambda item: item[1], reverse=True)
    measured = None
    if row.twin is not None:
        after = analyze_json(row.twin)
        measured = report["steps"]["mean_ms"] / after["steps"]["mean_ms"]
    return {
        "breakdown": ", ".join(f"{k} {v:.0%}" for k, v in shares if v >= 0.05),
        "verdict": report["bottleneck"],
        "predicted_gain": report["verdict"].get("predicted_gain"),
        "finding_gains": [f.get("predicted_gain", "missing") for f in report["findings"]],
        "measured": measured,
        "step_ms": report["steps"]["mean_ms"],
        "twin_ms": None if row.twin is None else analyze_json(row.twin)["steps"]["mean_ms"],
    }


def main() -> None:
    for row in rows():
        if not row.file.exists():
            print(f"{row.path}: missing", file=sys.stderr)
            continue
        got = measure(row)
        gain = got["predicted_gain"]
        measured = "" if got["measured"] is None else f"{got['measured']:.2f}x "
        twin = "" if got["twin_ms"] is None else f"({got['step_ms']:.1f} → {got['twin_ms']:.1f} ms)"
        print(
            f"| `{row.path}` | {got['breakdown']} | `{got['verdict']}` | "
            f"{'—' if gain is None else f'{gain:.2f}x'} | {measured}{twin} | {row.reason} |"
        )


if __name__ == "__main__":
    main()
