"""`--cluster`: each trace file read and analysed as one Dask task, on a cluster or on this machine.

A job's ranks are independent work with small results (a rank's `RankAnalysis`, a few KB), so
each file is one task: `client.submit(cluster_outcome, ...)` names the file by its path (the
workers read it where it lies, on the shared filesystem) and runs the local pool's own per-file
function (`fanout.file_outcome`); nothing big travels either way. The results are gathered as
they finish (`distributed.as_completed`, counted on stderr) and handed back in the files' order,
so the report is assembled by the local run's own code and is byte-identical to it.

Dask is optional (`pip install "torchtop[cluster]"`) and imported only here, only for
`--cluster`. `local[:N]` starts a `LocalCluster` of N single-threaded worker processes bound to
loopback with no dashboard (it opens no port beyond this machine), closed when the command ends.
A file that fails on a worker is skipped and named, and the others are kept: an unreadable file
as the local run skips it (the same note), a worker's exception or death with its one-line
reason. Ctrl-C cancels the tasks still owed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from torchtop.errors import InputError
from torchtop.fanout import FileReader, file_outcome, read_files
from torchtop.model.analysis import RankAnalysis
from torchtop.model.report import SkippedTrace
from torchtop.progress import CountProgress, progress_enabled
from torchtop.traces.reader import ProgressSink

if TYPE_CHECKING:
    from distributed import Client, Future, LocalCluster

CONNECT_TIMEOUT_S = 5.0
"""How long a scheduler at an address has to answer before `--cluster` gives up on it."""

NEEDS_DASK = ("--cluster needs Dask", 'pip install "torchtop[cluster]"')
"""The one line without Dask: `torchtop: --cluster needs Dask: pip install "torchtop[cluster]"`."""

Outcome = RankAnalysis | SkippedTrace


@contextlib.contextmanager
def trace_reader(address: str | None) -> Iterator[FileReader]:
    """What reads the trace files: the local pool (`fanout.read_files`) without an address,
    else the Dask cluster at `address` (`local[:N]`: one started here, closed on the way out)."""
    if address is None:
        yield read_files
        return
    client, cluster = connect(address)
    try:
        yield lambda files, progress: read_on_cluster(client, files, progress, address)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def connect(address: str) -> tuple[Client, LocalCluster | None]:
    """A client of the scheduler at `address`, or of a LocalCluster started for `local[:N]`
    (returned too, for closing); InputError in one line without Dask or without an answer."""
    workers = local_workers(address)
    try:
        import distributed
    except ImportError:
        raise InputError(*NEEDS_DASK) from None
    if workers is not None:
        with _ctrl_c_ignored():  # by the workers: Ctrl-C is ours to handle (cancel, close)
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",  # loopback only: no port beyond this machine
                dashboard_address=None,
                # Its health routes still listen: on loopback, on a free port (not 8787, which
                # another cluster may hold, and then Dask warns on stderr).
                scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                silence_logs=logging.ERROR,  # its workers' warnings (a task cancelled)
            )
        return distributed.Client(cluster, set_as_default=False), cluster
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(
            address,
            f"no Dask scheduler answered within {CONNECT_TIMEOUT_S:g} s ({_one_line(exc)})",
        ) from None
    return client, None


@contextlib.contextmanager
def _ctrl_c_ignored() -> Iterator[None]:
    """SIGINT ignored while the LocalCluster's worker processes start, so they inherit it:
    Ctrl-C reaches the whole foreground process group, and a worker stopped by it would print
    its own traceback while this process cancels the tasks and closes the cluster. (A Ctrl-C
    in those seconds of start-up is lost; the disposition, unlike a blocked mask, reaches the
    event-loop thread that spawns them.)"""
    with _sigint_handled_by(signal.SIG_IGN):
        yield


@contextlib.contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """A Ctrl-C while the tasks are submitted is held until the last is out, then raised: one
    landing inside `client.submit` leaves a half-built Future that prints a traceback when it
    is collected, after "torchtop: interrupted"."""
    held: list[int] = []
    with _sigint_handled_by(lambda signum, frame: held.append(signum)):
        yield
    if held:
        raise KeyboardInterrupt


@contextlib.contextmanager
def _sigint_handled_by(handler: Any) -> Iterator[None]:
    """SIGINT's handler set to `handler` for the block, then put back; off the main thread,
    where Python cannot set one, nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


def local_workers(address: str) -> int | None:
    """N of `local[:N]` (the cores this process may use when N is left out); None for the
    address of a running scheduler."""
    name, colon, count = address.partition(":")
    if name != "local":
        return None
    if not colon:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if not count.isdigit() or int(count) < 1:
        raise InputError("--cluster", f"{address!r}: local:N wants N, a number of workers from 1")
    return int(count)


def read_on_cluster(
    client: Client,
    files: list[Path],
    progress: Callable[[Path], ProgressSink | None] | None,
    where: str,
) -> Iterator[Outcome]:
    """Each file's analysis, or why it failed, in the files' order; `ranks done of total` on
    stderr (on a terminal) when the caller draws progress at all."""
    if not client.scheduler_info().get("workers"):  # a batch job's workers may come later
        print(
            f"torchtop: {where}: no workers yet; the {len(files)} trace files wait for them "
            "(Ctrl-C stops)",
            file=sys.stderr,
        )
    bar = None
    if progress is not None and progress_enabled():
        bar = CountProgress(where, "rank traces")
    try:
        yield from gathered(client, files, bar)
    finally:
        if bar is not None:
            bar.close()


def gathered(client: Client, files: list[Path], sink: ProgressSink | None) -> list[Outcome]:
    """Every file's outcome, one task each, gathered as they finish and put in the files'
    order; `sink(done, total)` after each. Ctrl-C (or any error here) cancels what is owed."""
    from distributed import as_completed

    # The futures still owed, by key: one is let go as soon as its result is here, so that
    # the workers let go of that result too (held to the end, 2,048 ranks' results kept the
    # workers ~190 MB above 64 ranks').
    owed: dict[Hashable, Future[Any]] = {}
    outcomes: list[Outcome | None] = [None] * len(files)
    try:
        with _ctrl_c_held():
            for path in files:
                future = client.submit(cluster_outcome, str(path), str(path.absolute()), pure=False)
                owed[future.key] = future
        place = {key: index for index, key in enumerate(owed)}
        tracked = as_completed(list(owed.values()), loop=client.loop)
        for done, future in enumerate(tracked, 1):
            index = place[future.key]
            outcomes[index] = _outcome_of(future, files[index])
            del owed[future.key]
            if sink is not None:
                sink(done, len(files))
    except BaseException:
        client.cancel([future for future in owed.values() if not future.done()])
        raise
    return [outcome for outcome in outcomes if outcome is not None]


def cluster_outcome(given: str, where: str) -> Outcome:
    """On a worker: the file at `where` (absolute, as workers start elsewhere) analysed by the
    local pool's own function, and named as `given` on the command line, as the local run
    names it."""
    outcome = file_outcome(Path(where))
    if isinstance(outcome, SkippedTrace):
        problem = outcome.problem.replace(where, given)
        return SkippedTrace(given if outcome.path == where else outcome.path, problem)
    infos = tuple(
        msgspec.structs.replace(info, path=given) if info.path == where else info
        for info in outcome.infos
    )
    return msgspec.structs.replace(outcome, infos=infos)


def _outcome_of(future: Future[Any], path: Path) -> Outcome:
    """The task's result, or the file skipped with why the cluster could not give one."""
    if future.status == "finished":
        result = future.result()
        assert isinstance(result, RankAnalysis | SkippedTrace)
        return result
    if future.status == "error":
        return SkippedTrace(str(path), f"failed on the cluster: {_one_line(future.exception())}")
    return SkippedTrace(str(path), f"its task on the cluster ended {future.status}")


def _one_line(exc: BaseException | None) -> str:
    """An exception as one line: its type and its message's first line."""
    if exc is None:
        return "no reason given"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
