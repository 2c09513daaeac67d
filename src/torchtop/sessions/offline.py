"""`analyze` as a use case: paths in, a `Report` per job out (traces -> analysis -> diagnosis).

A folder of traces is one job only when its files look like one job's ranks (`analysis.jobs`);
otherwise each job gets its own report (`one_job` pools them all, as `--one-job` asks). A file
that cannot be read is skipped with a note naming it; only when none can be read is the input
refused. Each file is read and reduced to its analysis before its reader takes the next, so
memory holds one trace's columns per reader, however many ranks a folder has; several files are
read by one process per core at a time (`fanout`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from torchtop.analysis.jobs import split_jobs
from torchtop.analysis.summary import job_analysis, merge_rank
from torchtop.assess.straggler_metrics import profiled_metrics
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleTree, load_rules
from torchtop.errors import InputError
from torchtop.fanout import FileReader, read_files
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.report import JobReports, RankReport, Report, SkippedTrace
from torchtop.runs.layout import RunLayout, is_run_folder
from torchtop.runs.segments import is_tune_folder
from torchtop.traces import find_trace_files
from torchtop.traces.logdir import choose_run
from torchtop.traces.reader import ProgressSink

if TYPE_CHECKING:
    from torchtop.runs.state import RunState

ProgressFactory = Callable[[Path], ProgressSink | None]


def analyze_paths(
    paths: list[str],
    rules: RuleTree | None = None,
    progress: ProgressFactory | None = None,
    run: str | None = None,
    reader: FileReader = read_files,
) -> Report:
    """One report on everything given, read as one job (`--one-job`). `run`: which run of a
    TensorBoard log folder (`traces.logdir`); None: the newest. `reader`: what reads the trace
    files (`fanout.read_files`, or a Dask cluster's from `cluster`)."""
    jobs, _ = analyze_jobs(paths, rules, progress, run, one_job=True, reader=reader)
    return jobs.reports[0]


def analyze_and_load(
    paths: list[str],
    rules: RuleTree | None = None,
    progress: ProgressFactory | None = None,
    run: str | None = None,
) -> tuple[Report, RunState | None]:
    """`analyze_paths`, and the run folder's state when the one path is a run folder."""
    jobs, state = analyze_jobs(paths, rules, progress, run, one_job=True)
    return jobs.reports[0], state


def analyze_jobs(
    paths: list[str],
    rules: RuleTree | None = None,
    progress: ProgressFactory | None = None,
    run: str | None = None,
    one_job: bool = False,
    segment: int | None = None,
    reader: FileReader = read_files,
) -> tuple[JobReports, RunState | None]:
    """A report per job among the traces at `paths` (one for a run folder), and the run
    folder's state when the one path is a run folder: `view` shows both, and the folder is
    read once. A run folder is read as the job now runs (`run_folder`); `segment` picks
    another of its jobs (0: as started). A `tune` folder is read as the job as tuned, with its
    trials (`assess.session`), as a run folder is."""
    tree = rules or load_rules()
    if len(paths) == 1 and run is None and segment is None and is_tune_folder(Path(paths[0])):
        from torchtop.assess.session import tune_folder_report  # only for tune folders

        tuned, state = tune_folder_report(Path(paths[0]), tree)
        if tuned is not None:  # else its traces, as before
            return JobReports((tuned,)), state
    if len(paths) == 1 and is_run_folder(root := Path(paths[0])) and run is None:
        # Only for run folders: traces skip their import.
        from torchtop.assess.recorded import run_folder_report
        from torchtop.assess.session import with_session_verdict
        from torchtop.runs.identity import node_folders

        report, state = run_folder_report(root, tree, segment)
        if report is not None:
            if segment is None:  # the session's verdict where the job now has none yet
                report = with_session_verdict(report, root, state.layout.root, tree)
            return JobReports((report,)), state
        traces = [str(RunLayout(f).traces_dir) for f in node_folders(root) or [root]]
        return _analyze_traces(traces, tree, progress, True, reader), state
    if segment is not None:
        raise InputError(
            "--segment", f"applies to a run folder recorded by torchtop run, not {paths[0]}"
        )
    chosen = choose_run(paths, run)
    jobs = _analyze_traces(chosen.files, tree, progress, one_job, reader)
    if chosen.note is not None:
        jobs = _noted(jobs, (chosen.note,))
    return jobs, None


def _analyze_traces(
    paths: list[str],
    tree: RuleTree,
    progress: ProgressFactory | None,
    one_job: bool,
    reader: FileReader,
) -> JobReports:
    files = find_trace_files(paths)
    analyses: list[RankAnalysis] = []
    skipped: list[SkippedTrace] = []
    # Several files: one per core at a time, or one task each on a Dask cluster.
    for outcome in reader(files, progress):
        if isinstance(outcome, SkippedTrace):
            skipped.append(outcome)
        else:
            analyses.append(outcome)
    if not analyses:
        raise _nothing_read(paths, skipped)
    groups, apart = ([analyses], []) if one_job else split_jobs(analyses)
    reports = tuple(
        traces_report([Path(a.infos[0].path) for a in group], group, tree) for group in groups
    )
    jobs = JobReports(reports, tuple(skipped), tuple(apart))
    return _noted(jobs, tuple(s.note() for s in skipped)) if len(reports) == 1 else jobs


def _nothing_read(paths: list[str], skipped: list[SkippedTrace]) -> InputError:
    """One line naming the input: the file's own problem, or how many files failed and why."""
    if len(skipped) == 1:
        return InputError(skipped[0].path, skipped[0].problem)
    first, whose = skipped[0], "its" if len(paths) == 1 else "the"
    return InputError(
        " ".join(paths),
        f"none of {whose} {len(skipped)} trace files could be read ({first.path}: "
        f"{first.problem}; and {len(skipped) - 1} more)",
    )


def _noted(jobs: JobReports, notes: tuple[str, ...]) -> JobReports:
    """`jobs` with `notes` added to each report's."""
    reports = tuple(msgspec.structs.replace(r, notes=(*r.notes, *notes)) for r in jobs.reports)
    return msgspec.structs.replace(jobs, reports=reports)


def traces_report(files: list[Path], analyses: Iterable[RankAnalysis], tree: RuleTree) -> Report:
    """The report on trace files from each file's analysis, in the files' order."""
    by_rank: dict[str, list[RankAnalysis]] = defaultdict(list)
    for analysis in analyses:
        by_rank[analysis.label].append(analysis)
    ranks = [merge_rank(parts) for parts in by_rank.values()]
    ranks.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.label))
    job = job_analysis(ranks)
    spread = job.metrics.get("rank_step_spread")
    straggler = profiled_metrics(
        ranks, spread if isinstance(spread, float) else None, tree.settings.ranks
    )
    job = msgspec.structs.replace(job, metrics={**job.metrics, **straggler})
    rank_reports = (
        tuple(RankReport(r, _diagnosed(tree, r)) for r in ranks) if len(ranks) > 1 else ()
    )
    return Report(
        source_kind="trace",
        paths=tuple(str(p) for p in files),
        job=job,
        verdict=_diagnosed(tree, job),
        ranks=rank_reports,
    )


NO_STACKS = (
    "could not locate the line: the trace has no Python stacks (profile with "
    "with_stack=True, or watch the job with `torchtop run`)"
)


def _diagnosed(tree: RuleTree, analysis: RankAnalysis) -> Verdict:
    """The verdict on `analysis`, its code fixes located in the traces' Python stacks: built
    only when a code fix is offered, so most reports pay nothing for them."""
    verdict = diagnose(tree, analysis.metrics, analysis.steps)
    if all(fix.apply != "code" for finding in verdict.findings for fix in finding.fixes):
        return verdict
    # Only for a code fix; `locate` needs nothing of the planner (psutil, subprocess).
    from torchtop.advice.locate import located_verdict, python_call_stacks

    if not analysis.python_calls:
        return located_verdict(verdict, NO_STACKS)
    stacks = [s for calls in analysis.python_calls for s in python_call_stacks(calls)]
    return located_verdict(verdict, stacks)
