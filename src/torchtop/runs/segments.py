"""A run folder as the whole run: the job as started, each job started again after a trial or a
revert (`RUN/jobs/NN/`), and every trial tried on it (`RUN/trials/NN.json`, and
`NN-cancelled.json` for one the user cancelled).

`analyze RUN` and `view RUN` read the job as it now runs: the newest segment whose agent
reported steps (`offline`). Segment 0 is RUN itself (the job as started); segment N is
`RUN/jobs/NN/`.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from torchtop.model.trial_entry import TrialEntry, TrialRuns
from torchtop.runs.layout import RunLayout

_CANCELLED = "-cancelled"


def segment_roots(root: Path) -> list[Path]:
    """RUN itself, then each `RUN/jobs/NN/` in its number's order."""
    jobs = RunLayout(root).jobs_dir
    numbered = [p for p in jobs.glob("*") if p.is_dir() and p.name.isdigit()]
    return [root, *sorted(numbered, key=lambda p: int(p.name))]


def segment_name(root: Path, segment: Path) -> str:
    """`RUN` for the run folder itself, else its path under it (`jobs/01`)."""
    return "RUN" if segment == root else segment.relative_to(root).as_posix()


def trial_entries(root: Path) -> tuple[TrialEntry, ...]:
    """Every trial recorded in RUN, decided or cancelled, by number; each run's step times left
    out (as in the live report). A file that is not a trial entry is skipped."""
    found: list[TrialEntry] = []
    for path in RunLayout(root).trials_dir.glob("*.json"):
        if not path.stem.removesuffix(_CANCELLED).isdigit():
            continue
        try:
            entry = msgspec.json.decode(path.read_bytes(), type=TrialEntry)
        except (OSError, msgspec.DecodeError):
            continue
        found.append(_without_steps(entry))
    return tuple(sorted(found, key=lambda e: e.number))


def _without_steps(entry: TrialEntry) -> TrialEntry:
    runs = TrialRuns(
        before=tuple(msgspec.structs.replace(r, step_wall_s=None) for r in entry.runs.before),
        after=tuple(msgspec.structs.replace(r, step_wall_s=None) for r in entry.runs.after),
    )
    return msgspec.structs.replace(entry, runs=runs)
