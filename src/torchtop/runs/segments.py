"""A run folder as the whole run: the job as started, each job started again after a trial or a
revert (`RUN/jobs/NN/`), and every trial tried on it (`RUN/trials/NN.json`, and
`NN-cancelled.json` for one the user cancelled).

`analyze RUN` and `view RUN` read the job as it now runs: the newest segment whose agent
reported steps (`offline`). Segment 0 is RUN itself (the job as started); segment N is
`RUN/jobs/NN/`. A `tune` folder has no segments: its job ran in `RUN/baseline/` and its trials'
runs (`is_tune_folder`). The trials carry the user's reverts (`RUN/reverts.jsonl`), as the live
report's entries do.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from torchtop.model.trial_entry import Reverted, TrialEntry, TrialRuns
from torchtop.runs.journal import JournalReader
from torchtop.runs.layout import RunLayout, is_run_folder
from torchtop.runs.records import Revert

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
    return _with_reverts(root, sorted(found, key=lambda e: e.number))


def is_tune_folder(path: Path) -> bool:
    """A folder `tune` recorded: its baseline is a run folder, and it is none itself."""
    return not is_run_folder(path) and is_run_folder(RunLayout(path).baseline_dir)


def _with_reverts(root: Path, entries: list[TrialEntry]) -> tuple[TrialEntry, ...]:
    """Each entry with the revert of its fix, and the figures it was reverted on."""
    reverts = {
        r.trial: r
        for r in JournalReader(RunLayout(root).reverts).read_new(final=True)
        if isinstance(r, Revert)
    }
    return tuple(_reverted(e, reverts[e.number]) if e.number in reverts else e for e in entries)


def _reverted(entry: TrialEntry, revert: Revert) -> TrialEntry:
    back = Reverted(
        at=revert.at, run_dir=revert.run_dir or "", from_run_dir=revert.from_run_dir or ""
    )
    since = revert.since_relaunch or entry.since_relaunch
    return msgspec.structs.replace(entry, reverted=back, since_relaunch=since)


def _without_steps(entry: TrialEntry) -> TrialEntry:
    runs = TrialRuns(
        before=tuple(msgspec.structs.replace(r, step_wall_s=None) for r in entry.runs.before),
        after=tuple(msgspec.structs.replace(r, step_wall_s=None) for r in entry.runs.after),
    )
    return msgspec.structs.replace(entry, runs=runs)
