"""`analyze` as a use case: paths in, a `Report` out (traces -> analysis -> diagnosis).

Files are read one at a time and reduced to their analysis before the next is read, so memory
holds one trace's columns at most, however many ranks a folder has.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from torchtop.analysis.summary import analyze_trace, mean_metrics, merge_rank, rank_spread_metrics
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleTree, load_rules
from torchtop.model.analysis import RankAnalysis
from torchtop.model.report import RankReport, Report
from torchtop.runs.layout import RunLayout, is_run_folder
from torchtop.runs.state import load_run
from torchtop.traces import find_trace_files, read_trace
from torchtop.traces.reader import ProgressSink

ProgressFactory = Callable[[Path], ProgressSink | None]


def analyze_paths(
    paths: list[str], rules: RuleTree | None = None, progress: ProgressFactory | None = None
) -> Report:
    tree = rules or load_rules()
    if len(paths) == 1 and is_run_folder(Path(paths[0])):
        report = analyze_run(Path(paths[0]), tree)
        if report is not None:
            return report
        paths = [str(RunLayout(Path(paths[0])).traces_dir)]
    files = find_trace_files(paths)
    by_rank: dict[str, list[RankAnalysis]] = defaultdict(list)
    for path in files:
        sink = progress(path) if progress else None
        analysis = analyze_trace(read_trace(path, on_progress=sink))
        by_rank[analysis.label].append(analysis)
    ranks = [merge_rank(parts) for parts in by_rank.values()]
    ranks.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0, r.label))
    job = ranks[0] if len(ranks) == 1 else job_analysis(ranks)
    rank_reports = (
        tuple(RankReport(r, diagnose(tree, r.metrics)) for r in ranks) if len(ranks) > 1 else ()
    )
    return Report(
        source_kind="trace",
        paths=tuple(str(p) for p in files),
        job=job,
        verdict=diagnose(tree, job.metrics),
        ranks=rank_reports,
    )


def analyze_run(root: Path, tree: RuleTree) -> Report | None:
    """A run folder recorded by `torchtop run`, read through the live view's own assessment.

    None when no agent reported steps (the job never imported torch): then only its profiler
    windows, if any, can be analysed, as plain traces."""
    from torchtop.live.assess import assess
    from torchtop.live.watch import WindowCache

    state = load_run(root)
    if not state.training_processes:
        return None
    return assess(state, WindowCache().latest(state), tree, str(state.run.get("kind", "run")))


def job_analysis(ranks: list[RankAnalysis]) -> RankAnalysis:
    """The job seen through all its ranks: mean shares and metrics, plus their spread."""
    categories = ranks[0].breakdown.keys()
    breakdown = {c: float(np.mean([r.breakdown[c] for r in ranks])) for c in categories}
    metrics = mean_metrics([r.metrics for r in ranks])
    metrics.update({f"{c}_share": v for c, v in breakdown.items()})
    metrics["steps_count"] = min(len(r.steps) for r in ranks)
    metrics.update(rank_spread_metrics(ranks))
    slowest = max(ranks, key=lambda r: float(r.metrics.get("step_mean_ms") or 0.0))
    return RankAnalysis(
        rank=None,
        label=f"{len(ranks)} ranks",
        infos=tuple(i for r in ranks for i in r.infos),
        devices=slowest.devices,
        steps=slowest.steps,
        breakdown=breakdown,
        metrics=metrics,
        top_kernels=slowest.top_kernels,
        top_ops=slowest.top_ops,
        copies=slowest.copies,
        notes=tuple(dict.fromkeys(n for r in ranks for n in r.notes)),
    )
