"""Analyse several trace files at once: one forked process per core, each file to its analysis.

A job's traces come one file per rank (and per profiled span), and each file is read and reduced
to its `RankAnalysis` on its own, so the files are independent work. With two or more files,
worker processes forked from this one (everything already imported) take the files in order and
send back only the analyses (a few KB each); the results are put back in the files' order, so
the report is exactly the one a single process makes. Each worker reads its file alone when
the workers take all the cores; with two cores per worker, a big file gets its own reading
worker as it would outside the pool (`traces.parallel`).

How many workers: no more than the files, the cores this process may run on, and what the
available memory holds at once (a file's columns take about a third of its inflated size, plus
the interpreter); none when one file is more than half of all the bytes (that file then gets
two cores of its own from `traces.parallel`, which beats reading it alone in the pool). Only on
Linux and only while one thread runs, as for `traces.parallel`; `TORCHTOP_READ_WORKERS=1` reads
the files one at a time in this process, `2` forces the pool. A worker that dies (killed for
memory, say) costs a re-read of the files still owed, in this process; a bad file is reported
as the serial reader reports it, naming the file.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

from torchtop.analysis.summary import analyze_trace
from torchtop.errors import InputError
from torchtop.model.analysis import RankAnalysis
from torchtop.model.report import SkippedTrace
from torchtop.traces import read_trace
from torchtop.traces.parallel import WORKERS_ENV, fork_choice, inflated_size
from torchtop.traces.reader import ProgressSink

MIN_TOTAL_BYTES = 8 << 20
"""Below this many (inflated) bytes in all, the files are read one after the other: forking
and gathering cost more than the second core saves."""

BYTES_PER_INFLATED_BYTE = 0.35
"""A reader's peak memory per inflated byte of its file (the 35 MB sample: ~12 MB of columns
and buffers; the 1 GB trace: ~270 MB), for sizing the pool to the available memory."""

WORKER_BASE_BYTES = 80 << 20
"""A worker's own memory before it reads (the interpreter, numpy, the analysis)."""

FileReader = Callable[
    [list[Path], Callable[[Path], ProgressSink | None] | None],
    Iterator[RankAnalysis | SkippedTrace],
]
"""What reads trace files for `analyze`: `read_files` here, or `cluster`'s on a Dask cluster;
each file's analysis or why it could not be read, in the files' order."""


def analyze_files(
    files: list[Path], progress: Callable[[Path], ProgressSink | None] | None = None
) -> Iterator[RankAnalysis]:
    """The analysis of each file, in the files' order; InputError for the first bad one."""
    for outcome in read_files(files, progress):
        if isinstance(outcome, SkippedTrace):
            raise InputError(outcome.path, outcome.problem)
        yield outcome


def read_files(
    files: list[Path], progress: Callable[[Path], ProgressSink | None] | None = None
) -> Iterator[RankAnalysis | SkippedTrace]:
    """Each file's analysis, or why it could not be read, in the files' order."""
    workers = pool_size(files)
    if workers < 2:
        for path in files:
            yield file_outcome(path, progress(path) if progress else None)
        return
    yield from _pooled(files, workers, progress)


def pool_size(files: list[Path]) -> int:
    """How many worker processes to read `files` with (1: none, read them here)."""
    choice = False if len(files) < 2 else fork_choice()
    if choice is False:
        return 1
    cores = len(os.sched_getaffinity(0))
    if choice:  # forced
        return min(len(files), max(cores, 2))
    sizes = [inflated_size(path) for path in files]
    if sum(sizes) < MIN_TOTAL_BYTES or max(sizes) > sum(sizes) / 2:
        # Too little to share out, or one file is most of the work: then it is read faster
        # on two cores of its own (`traces.parallel`) than alone in a pool worker (a 1 GB and
        # a 35 MB trace: 9.3 s pooled).
        return 1
    per_worker = WORKER_BASE_BYTES + BYTES_PER_INFLATED_BYTE * max(sizes)
    return max(1, min(len(files), cores, int(_available_memory() // per_worker)))


def _available_memory() -> int:
    import psutil  # only the pool needs it

    return int(psutil.virtual_memory().available)


def _pooled(
    files: list[Path], workers: int, progress: Callable[[Path], ProgressSink | None] | None
) -> Iterator[RankAnalysis | SkippedTrace]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    sink = progress(Path(f"{len(files)} trace files")) if progress else None
    results: list[RankAnalysis | SkippedTrace] = []
    context = multiprocessing.get_context("fork")
    # With two cores per worker to spare, a worker may read a big file on two of its own.
    spare = len(os.sched_getaffinity(0)) >= 2 * workers
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_in_worker, initargs=(spare,)
    ) as pool:
        futures = [pool.submit(file_outcome, path) for path in files]
        try:
            for done, future in enumerate(futures, 1):
                results.append(future.result())
                if sink is not None:
                    sink(done, len(files))
        except BrokenProcessPool:
            pass  # a worker died: the files still owed are read here, one at a time
    yield from results
    for path in files[len(results) :]:
        yield file_outcome(path)


def _in_worker(spare_cores: bool) -> None:
    """In each worker: read files in this process only unless there are two cores per worker
    (else a worker of a worker would only compete for them), and end quietly with the command
    on Ctrl-C (the parent says it was interrupted)."""
    if not spare_cores:
        os.environ[WORKERS_ENV] = "1"
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def file_outcome(path: Path, sink: ProgressSink | None = None) -> RankAnalysis | SkippedTrace:
    """The file's analysis, or its InputError as plain data (an exception with its own
    arguments does not survive pickling from a worker as itself): the one per-file task of the
    pool here and of a Dask cluster (`cluster`)."""
    try:
        return analyze_trace(read_trace(path, on_progress=sink))
    except InputError as exc:
        return SkippedTrace(exc.subject, exc.problem)
