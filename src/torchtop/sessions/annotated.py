"""`analyze --annotate` as a use case: trace files in, the report and annotated copies out.

Each file is read once, here and one after the other: the annotation needs what the report
drops (each file's own clock origin and its own steps, before a rank's files are pooled), and
the report is made from the very same analyses (`traces_report` of `sessions.offline`), so
it is the one plain `analyze` prints. A file's reading is released before the next is read,
and the copies are written by streaming the original bytes (`report.annotate`).
"""

from __future__ import annotations

from pathlib import Path

from torchtop.analysis.summary import analyze_trace
from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import InputError
from torchtop.model.analysis import RankAnalysis
from torchtop.model.report import Report
from torchtop.report.annotate import (
    annotated_paths,
    annotation_events,
    check_output,
    write_annotated,
)
from torchtop.runs.layout import is_run_folder
from torchtop.sessions.offline import ProgressFactory, traces_report
from torchtop.traces import find_trace_files, read_trace


def annotate_paths(
    paths: list[str], out: Path, tree: RuleTree, progress: ProgressFactory | None = None
) -> tuple[Report, list[Path]]:
    """The report on the traces at `paths`, and where their annotated copies were written: `out`
    for one file, `out` with each file's rank in its name for several."""
    for text in paths:
        if is_run_folder(Path(text)):
            raise InputError(
                text,
                "--annotate writes trace files, and a run folder is read as a run: annotate "
                f"its traces instead: torchtop analyze {Path(text) / 'traces'} --annotate {out}",
            )
    files = find_trace_files(paths)
    check_output(out, files)  # a bad OUT fails before a long read, not after
    analyses: list[RankAnalysis] = []
    origins_us: list[float] = []
    for path in files:
        trace = read_trace(path, on_progress=progress(path) if progress else None)
        origins_us.append(trace.origin_us)
        analyses.append(analyze_trace(trace))
        del trace  # its columns go before the next file is read
    report = traces_report(files, analyses, tree)
    targets = annotated_paths(out, [_tag(a) for a in analyses])
    for target in targets:
        check_output(target, files)
    verdicts = {r.analysis.label: r.verdict for r in report.ranks}
    for path, analysis, origin_us, target in zip(files, analyses, origins_us, targets, strict=True):
        findings = verdicts.get(analysis.label, report.verdict).findings
        write_annotated(path, target, annotation_events(analysis.steps, origin_us, findings))
    return report, targets


def _tag(analysis: RankAnalysis) -> str:
    return f"rank{analysis.rank}" if analysis.rank is not None else analysis.label
