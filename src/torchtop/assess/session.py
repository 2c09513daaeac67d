"""A run folder read as the session it records: its verdict, its trials, the fix kept or reverted.

A session's job runs in several folders. `run` and `demo` start it in RUN and again in
`RUN/jobs/NN/` after each trial or revert (`runs.segments`); each trial measures it in
`RUN/trials/NN/{before,after}-K/`; `tune` measures it only there and in `RUN/baseline/`. The job
as it now runs may have too few steps for a verdict (quit right after a revert: "4 of the 5
steps needed"), while the session watched the same settings for minutes in another folder. So
the session's verdict is the job's as it now runs, and where that has none yet, the verdict of
the newest folder that ran the same settings (the same command and fixes: after a revert, the
job as first started and the trial's "before" runs), said in a note. Settings are never mixed:
a folder that ran other fixes measured another job.

`tune_folder_report` reads a `tune` folder so: the job as tuned (the newest kept trial's "after"
runs, else the baseline), with every trial.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from torchtop.assess.context import Context
from torchtop.assess.recorded import assess_recorded
from torchtop.diagnosis.rules import RuleTree
from torchtop.model.report import Report
from torchtop.model.trial_entry import TrialEntry
from torchtop.runs.journal import read_record
from torchtop.runs.layout import RunLayout, is_run_folder
from torchtop.runs.records import RunRecord
from torchtop.runs.segments import segment_roots, trial_entries
from torchtop.runs.state import RunState

Ran = tuple[tuple[str, ...], tuple[tuple[str, str], ...]]
"""What a folder's job ran with: its command, and its fixes' knobs and values."""


def ran_with(folder: Path) -> Ran | None:
    """The command and fixes of `folder`'s `run.json`; None without one."""
    record = read_record(RunLayout(folder).run_json, RunRecord)
    if record is None:
        return None
    fixes = record.fixes if isinstance(record.fixes, list) else []
    return tuple(record.command), tuple((f.knob, repr(f.value)) for f in fixes)


def session_folders(root: Path) -> list[Path]:
    """Every folder of the session where its job ran: the segments, `tune`'s baseline and
    each trial's measured runs."""
    trials = RunLayout(root).trials_dir
    runs = [p for p in trials.glob("*/*") if p.parent.name.isdigit() and is_run_folder(p)]
    baseline = RunLayout(root).baseline_dir
    return [*segment_roots(root), *([baseline] if is_run_folder(baseline) else []), *runs]


def same_settings(root: Path, shown: Path) -> list[Path]:
    """The session's other folders whose job ran as `shown`'s does, newest first."""
    settings = ran_with(shown)
    if settings is None:
        return []
    found = [f for f in session_folders(root) if f != shown and ran_with(f) == settings]
    return sorted(found, key=_started_at, reverse=True)


def with_session_verdict(
    report: Report, root: Path, shown: Path, tree: RuleTree, context: Context | None = None
) -> Report:
    """`report` (the job as it now runs, recorded in `shown`), or where it has no verdict yet,
    the newest same-settings folder's verdict and figures under its ending, with a note."""
    from torchtop.runs.nodes import load_shared_run  # only for run folders

    if report.verdict.bottleneck != "unknown":
        return report
    for folder in same_settings(root, shown):
        found = assess_recorded(load_shared_run(folder), tree, context)
        if found is None or found.verdict.bottleneck == "unknown":
            continue
        note = (
            f"verdict from {_name(root, folder)}, which ran the job with the settings it runs "
            f"with now; the job as it now runs ({_name(root, shown)}) has none yet: "
            f"{report.verdict.reason}"
        )
        return msgspec.structs.replace(
            found, source_kind=report.source_kind, paths=report.paths, command=report.command,
            pid=report.pid, exit=report.exit, trials=report.trials, notes=(*found.notes, note),
        )  # fmt: skip
    return report


def tune_folder_report(
    root: Path, tree: RuleTree, context: Context | None = None
) -> tuple[Report | None, RunState]:
    """A `tune` folder: the job as tuned, with every trial and a note on where it was read."""
    from torchtop.runs.nodes import load_shared_run  # only for run folders

    trials = trial_entries(root)
    report, state, shown = None, None, RunLayout(root).baseline_dir
    for shown in _tuned_folders(root, trials):
        state = load_shared_run(shown)
        if (report := assess_recorded(state, tree, context)) is not None:
            break
    assert state is not None  # the baseline is always among them
    if report is None:
        return None, state
    report = with_session_verdict(report, root, shown, tree, context)
    kept = [f"{f.knob} = {f.value}" for t in trials if t.kept and not t.reverted for f in t.fixes]
    note = (
        f"tune: the job as tuned ({', '.join(kept) or 'no fix kept'}), read from "
        f"{_name(root, shown)}; the baseline in {_name(root, RunLayout(root).baseline_dir)}; "
        f"{len(trials)} trial(s) in RUN/trials"
    )
    report = msgspec.structs.replace(
        report, source_kind="tune", paths=(str(root),), trials=trials, notes=(*report.notes, note)
    )
    return report, state


def _tuned_folders(root: Path, trials: tuple[TrialEntry, ...]) -> list[Path]:
    """Where the job as tuned ran: the newest kept trial's "after" runs, then the baseline."""
    kept = [t for t in trials if t.kept]
    runs = kept[-1].runs.after if kept else ()
    found = [_located(root, kept[-1].number, Path(r.run_dir)) for r in reversed(runs)]
    return [*(f for f in found if is_run_folder(f)), RunLayout(root).baseline_dir]


def _located(root: Path, number: int, recorded: Path) -> Path:
    """A trial's run folder under this folder (which may have moved since), else as recorded."""
    here = RunLayout(root).trial_dir(number) / recorded.name
    return here if is_run_folder(here) else recorded


def _name(root: Path, folder: Path) -> str:
    """`RUN` for the folder itself, else its path under it (`trials/01/before-2`)."""
    try:
        relative = folder.relative_to(root)
    except ValueError:
        return str(folder)
    return "RUN" if relative == Path() else f"RUN/{relative.as_posix()}"


def _started_at(folder: Path) -> float:
    record = read_record(RunLayout(folder).run_json, RunRecord)
    return (record.started_at or 0.0) if record is not None else 0.0
