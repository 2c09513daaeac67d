"""A recorded run folder assessed as the live view assessed it, and read as the whole run.

After a fix tried from the dashboard the job runs on in `RUN/jobs/NN/` (`runs.segments`):
`run_folder_report` assesses the newest segment whose agent reported steps (the job as it now
runs), or the one `--segment` names (0: RUN as started), lists every trial of the run
(decided or cancelled, with its revert) and notes the segments and which one is shown; where
the job as it now runs has no verdict yet, `assess.session` gives the session's.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from torchtop.assess.context import Context, read_context, with_frames
from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.model.report import Report
from torchtop.runs.journal import read_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import RunRecord
from torchtop.runs.segments import segment_name, segment_roots, trial_entries
from torchtop.runs.state import RunState


def analyze_run(root: Path, tree: RuleTree) -> Report | None:
    """A run folder recorded by `torchtop run`, read through the live view's own assessment.

    None when no agent reported steps (the job never imported torch): then only its profiler
    windows, if any, can be analysed, as plain traces."""
    from torchtop.runs.nodes import load_shared_run  # only for run folders

    return assess_recorded(load_shared_run(root), tree)


def assess_recorded(
    state: RunState, tree: RuleTree, context: Context | None = None
) -> Report | None:
    """The report on a loaded run folder; None when no agent reported steps. `context`: the
    machine assessing (read here where not given: this module is the analyze side's edge)."""
    from torchtop.assess.run import assess
    from torchtop.assess.windows import WindowCache

    if not state.training_processes:
        if state.launch.kind == "attach":
            # Recorded by `attach` without an agent: its stack samples, each rank apart.
            from torchtop.assess.attached_ranks import assess_attached_ranks

            found = with_frames(context or read_context())
            return assess_attached_ranks(state, {}, tree, "attach", context=found)
        return None
    windows = WindowCache()
    kind = state.launch.kind or "run"
    return assess(
        state,
        windows.pooled(state),
        tree,
        kind,
        each_window=windows.each(state),
        context=context or read_context(),
    )


def run_folder_report(
    root: Path, tree: RuleTree, segment: int | None = None, context: Context | None = None
) -> tuple[Report | None, RunState]:
    """The job as it now runs in `root` (or segment `segment`), with the run's trials and a
    note on its segments; the report is None when no segment's agent reported steps."""
    from torchtop.runs.nodes import load_shared_run  # a folder several nodes shared: one run

    roots = segment_roots(root)
    if segment is not None and not 0 <= segment < len(roots):
        last = len(roots) - 1
        raise InputError("--segment", f"{root} has segments 0 to {last}, not {segment}")
    order = [segment] if segment is not None else list(range(len(roots)))[::-1]
    report, state, shown = None, None, order[0]
    for index in order:
        state, shown = load_shared_run(roots[index]), index
        if (report := assess_recorded(state, tree, context)) is not None:
            break
    assert state is not None  # `order` is never empty: RUN itself is segment 0
    trials = trial_entries(root)
    if report is None or (len(roots) == 1 and not trials):
        return report, state
    note = _segments_note(root, roots, shown)
    report = msgspec.structs.replace(report, trials=trials, notes=(*report.notes, note))
    return report, state


def _segments_note(root: Path, roots: list[Path], shown: int) -> str:
    """`segments: 0 RUN as started; 1 jobs/01 with dataloader.num_workers = 4; shown: 1 (the
    job as it now runs); another: torchtop analyze RUN --segment N`."""
    said = "; ".join(
        f"{i} {segment_name(root, r)} {_how_started(i, r)}" for i, r in enumerate(roots)
    )
    now = " (the job as it now runs)" if shown == len(roots) - 1 else ""
    return (
        f"run segments: {said}; shown: {shown} {segment_name(root, roots[shown])}{now}; "
        f"another: torchtop analyze {root} --segment N"
    )


def _how_started(index: int, segment: Path) -> str:
    record = read_record(RunLayout(segment).run_json, RunRecord)
    fixes = record.fixes if record is not None and isinstance(record.fixes, list) else []
    if index == 0:
        return "as started"
    if not fixes:
        return "started again without fixes"
    return "started again with " + ", ".join(f"{f.knob} = {f.value}" for f in fixes)
