"""`analyze(paths, ...)`: traces, a folder of ranks or a run folder in, a `Report` out.

The CLI's `analyze` verb calls this with its options and prints `Report.render(...)`; the
keywords are its options. What only a command-line process wants stays in `cli/`: the early
start of a big file's read, the BLAS thread cap, the progress bar, warnings on stderr.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from torchtop.api.report import Report
from torchtop.errors import InputError

if TYPE_CHECKING:
    from torchtop.diagnosis.rules import RuleTree
    from torchtop.fanout import FileReader
    from torchtop.model.report import JobReports

ProgressFactory = Callable[[Path], Callable[[int, int], None] | None]
"""Given a trace file about to be read, a callback (bytes done, bytes in all), or None."""


def rule_tree(rules: str | Path | RuleTree | None) -> RuleTree:
    """The rule tree: the shipped one (None), one already loaded, or the one in a folder;
    a folder's bad rule is an InputError naming it, as `--rules` reports it."""
    from torchtop.diagnosis.rules import RuleError, RuleTree, load_rules

    if isinstance(rules, RuleTree):
        return rules
    try:
        return load_rules(Path(rules) if rules else None)
    except RuleError as exc:
        raise InputError("rules", str(exc)) from None


def analyze(
    paths: str | Path | Sequence[str | Path],
    *,
    rules: str | Path | RuleTree | None = None,
    run: str | None = None,
    segment: int | None = None,
    one_job: bool = False,
    cluster: str | None = None,
    annotate: str | Path | None = None,
    progress: ProgressFactory | None = None,
) -> Report:
    """The report `torchtop analyze PATH...` prints, as a `Report`.

    `paths`: a Kineto trace (`.json`, `.json.gz`), a folder of them (one per rank), a
    TensorBoard log folder, or a run folder recorded by `torchtop run`. The keywords are the
    CLI's options: `rules` (a folder of rule files), `run` (`--run`), `segment`
    (`--segment`), `one_job` (`--one-job`), `cluster` (`--cluster`: a Dask address or
    `local[:N]`), `annotate` (`--annotate OUT`: the trace written back with torchtop's
    tracks). Bad input raises `torchtop.errors.InputError` with the CLI's one-line message.
    """
    names = [str(paths)] if isinstance(paths, str | Path) else [str(p) for p in paths]
    if not names:
        raise InputError("paths", "no trace file or folder given")
    if cluster is not None and annotate is not None:
        raise InputError("--cluster", "not with --annotate (each copy is written here)")
    tree = rule_tree(rules)
    if annotate is not None:
        return _annotated(names, Path(annotate), tree, progress)
    with trace_files_reader(cluster) as reader:
        return Report.from_model(_jobs(names, tree, progress, run, one_job, segment, reader))


def _jobs(
    names: list[str],
    tree: RuleTree,
    progress: ProgressFactory | None,
    run: str | None,
    one_job: bool,
    segment: int | None,
    reader: FileReader,
) -> JobReports:
    # Looked up when called, so a test can stand in for the session.
    from torchtop.sessions import offline

    return offline.analyze_jobs(names, tree, progress, run, one_job, segment, reader)[0]


def _annotated(
    names: list[str], out: Path, tree: RuleTree, progress: ProgressFactory | None
) -> Report:
    from torchtop.model.report import JobReports
    from torchtop.sessions.annotated import annotate_paths

    report, written = annotate_paths(names, out, tree, progress)
    return Report.from_model(JobReports((report,)), tuple(written))


def trace_files_reader(cluster: str | None) -> contextlib.AbstractContextManager[FileReader]:
    """The local readers (`fanout`), or a Dask cluster's: `cluster.py` only when asked."""
    if cluster is None:
        from torchtop.fanout import read_files

        return contextlib.nullcontext(read_files)
    from torchtop.cluster import trace_reader

    return trace_reader(cluster)
