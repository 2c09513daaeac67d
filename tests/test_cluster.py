"""`--cluster`: each trace file a task on a real Dask cluster on loopback (a LocalCluster the
command starts, or a scheduler the test starts and names by address), the report byte for byte
the local run's, a failed rank named with the others kept, Ctrl-C cancelling the tasks, and one
line where Dask or the scheduler is missing. The ranks are 64 copies of a real 8-GPU job's ranks
(`param/dlrm_kineto`), built as `benchmarks/many_ranks.py` builds them."""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import io
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from torchtop.cli import main
from torchtop.model.analysis import RankAnalysis
from torchtop.model.report import SkippedTrace

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "dataloader_starved"
INTERRUPTED = 130


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory, shared: Path) -> Path:
    """64 rank traces in `<tmp>/ranks`."""
    # The benchmark by its path: benchmarks/ is no package (mypy reads it as top-level scripts).
    spec = importlib.util.spec_from_file_location(
        "many_ranks", ROOT / "benchmarks" / "many_ranks.py"
    )
    assert spec is not None and spec.loader is not None
    many_ranks = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("many_ranks", many_ranks)  # its dataclass looks itself up there
    spec.loader.exec_module(many_ranks)
    folder = tmp_path_factory.mktemp("job") / "ranks"
    folder.mkdir()
    many_ranks.build(sorted((shared / many_ranks.SOURCE).glob("*.json.gz")), 64, folder)
    return folder


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A scheduler and two single-threaded workers on loopback, as a user's cluster would be."""
    with loopback_cluster(workers=2) as running:
        yield running


def loopback_cluster(workers: int) -> Any:
    """A Dask scheduler with `workers` single-threaded workers, all on loopback."""
    distributed = pytest.importorskip("distributed")
    return distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        # The health routes on a free loopback port, as `--cluster local` has them.
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        silence_logs=logging.ERROR,
    )


def torchtop(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "TORCHTOP_PROGRESS": "0"}
    command = [sys.executable, "-m", "torchtop", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, env=env, timeout=180)


def analyze(*args: str) -> tuple[int, str, str]:
    """`torchtop analyze ARGS` in this process: status, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["analyze", *args])
    return status, out.getvalue(), err.getvalue()


def test_64_ranks_through_local_2_give_the_local_runs_report_byte_for_byte(ranks: Path) -> None:
    pytest.importorskip("distributed")
    # A relative path, as a user types it: the workers are told where the files lie, the
    # report names them as given.
    alone = torchtop("analyze", "ranks", "--format", "json", cwd=ranks.parent)
    spread = torchtop(
        "analyze", "ranks", "--format", "json", "--cluster", "local:2", cwd=ranks.parent
    )
    assert alone.returncode == 0 and spread.returncode == 0, spread.stderr.decode()
    assert len(json.loads(alone.stdout)["ranks"]) == 64
    assert spread.stdout == alone.stdout
    assert spread.stderr == alone.stderr == b""


def test_a_corrupt_and_a_truncated_rank_are_named_and_the_report_covers_the_others(
    ranks: Path, cluster: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "ranks"
    folder.mkdir()
    for rank in range(16):  # as many as make the point: each is a real rank's trace
        name = f"rank-{rank}.pt.trace.json.gz"
        shutil.copy(ranks / name, folder / name)
    corrupt = folder / "rank-3.pt.trace.json.gz"
    corrupt.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "na'))
    cut = folder / "rank-5.pt.trace.json.gz"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size * 2 // 3])
    status, out, err = analyze(
        str(folder), "--format", "json", "--cluster", cluster.scheduler_address
    )
    assert (status, out, err) == analyze(str(folder), "--format", "json")
    assert (
        err.splitlines()[0]
        == f"torchtop: skipped {corrupt}: truncated before its first whole event"
    )
    assert err.splitlines()[1].startswith(f"torchtop: {cut}: truncated: ")
    document = json.loads(out)
    assert f"skipped {corrupt}: truncated before its first whole event" in document["notes"]
    seen = sorted(r["rank"] for r in document["ranks"])
    assert seen == [r for r in range(16) if r != 3]


def test_each_rank_done_is_counted_and_the_outcomes_come_back_in_the_files_order(
    ranks: Path, cluster: Any
) -> None:
    from distributed import Client

    from torchtop.cluster import gathered

    files = sorted(ranks.glob("*.json.gz"))[:8]
    counted: list[tuple[int, int]] = []
    with Client(cluster, set_as_default=False) as client:
        outcomes = gathered(client, files, lambda done, total: counted.append((done, total)))
    assert counted == [(k, 8) for k in range(1, 9)]
    assert [o.infos[0].path for o in outcomes if isinstance(o, RankAnalysis)] == [
        str(f) for f in files
    ]


def test_each_result_is_let_go_on_the_cluster_once_it_is_here(ranks: Path, cluster: Any) -> None:
    """The workers keep a rank's result only until the client has it: held to the end, the
    results of thousands of ranks piled up on the workers."""
    from distributed import Client

    from torchtop.cluster import gathered

    files = sorted(ranks.glob("*.json.gz"))[:16]
    held: list[int] = []

    def at_the_last(done: int, total: int) -> None:
        if done == total:  # every result is here: the scheduler soon forgets all but this one
            deadline = time.monotonic() + 10
            while len(cluster.scheduler.tasks) > 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            held.append(len(cluster.scheduler.tasks))

    settled(cluster)
    with Client(cluster, set_as_default=False) as client:
        outcomes = gathered(client, files, at_the_last)
    assert len(outcomes) == 16
    assert held and held[0] <= 1


def test_a_task_that_raises_on_a_worker_skips_its_file_with_the_reason_in_one_line(
    cluster: Any,
) -> None:
    from distributed import Client

    from torchtop.cluster import _outcome_of

    with Client(cluster, set_as_default=False) as client:
        failed = client.submit(int, "rank three\nsecond line", pure=False)
        failed.exception(timeout=60)  # waits for it to fail
        outcome = _outcome_of(failed, Path("rank-3.json"))
    assert outcome == SkippedTrace(
        "rank-3.json",
        "failed on the cluster: ValueError: invalid literal for int() with base 10: "
        "'rank three\\nsecond line'",
    )


def test_ctrl_c_cancels_the_ranks_still_owed_on_the_cluster(ranks: Path, cluster: Any) -> None:
    env = {**os.environ, "TORCHTOP_PROGRESS": "0"}
    address = cluster.scheduler_address
    folders = [str(ranks)] * 4  # 256 tasks: seconds of work for two workers
    command = [sys.executable, "-m", "torchtop", "analyze", *folders, "--cluster", address]
    settled(cluster)  # no task of an earlier test's client left: the next ones are this run's
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    while not cluster.scheduler.tasks and time.monotonic() < deadline and job.poll() is None:
        time.sleep(0.01)
    job.send_signal(signal.SIGINT)
    out, err = job.communicate(timeout=60)
    assert (job.returncode, out, err) == (INTERRUPTED, b"", b"torchtop: interrupted\n")
    settled(cluster)
    assert not cluster.scheduler.tasks


def test_a_ctrl_c_while_the_tasks_are_submitted_is_raised_once_the_last_is_out() -> None:
    """A Ctrl-C inside `client.submit` left a half-built Future whose collection printed a
    traceback after "torchtop: interrupted" (the test above, when its signal landed there)."""
    from torchtop.cluster import _ctrl_c_held

    before = signal.getsignal(signal.SIGINT)
    submitted: list[int] = []
    with pytest.raises(KeyboardInterrupt), _ctrl_c_held():
        for task in range(3):
            if task == 1:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs here, between bytecodes
            submitted.append(task)
    assert submitted == [0, 1, 2]
    assert signal.getsignal(signal.SIGINT) is before


def settled(cluster: Any, within_s: float = 10.0) -> None:
    """Wait until the scheduler holds no task (a closed client's are released soon after)."""
    deadline = time.monotonic() + within_s
    while cluster.scheduler.tasks and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_scheduler_without_workers_yet_is_said_and_its_ranks_wait_for_the_first(
    ranks: Path,
) -> None:
    with loopback_cluster(workers=0) as empty:
        env = {**os.environ, "TORCHTOP_PROGRESS": "0"}
        files = [str(f) for f in sorted(ranks.glob("*.json.gz"))[:4]]
        command = ["analyze", *files, "--cluster", empty.scheduler_address, "--format", "json"]
        job = subprocess.Popen(
            [sys.executable, "-m", "torchtop", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert job.stderr is not None
        said = job.stderr.readline()
        empty.scale(1)  # as a batch job's worker joins after the scheduler
        out, _ = job.communicate(timeout=120)
    assert said == (
        f"torchtop: {empty.scheduler_address}: no workers yet; the 4 trace files wait for them "
        "(Ctrl-C stops)\n"
    )
    assert job.returncode == 0 and len(json.loads(out)["ranks"]) == 4


def test_the_count_of_ranks_done_is_drawn_on_one_line_after_a_second() -> None:
    from torchtop.progress import CountProgress

    now = [0.0]
    stream = io.StringIO()
    bar = CountProgress("local:2", "rank traces", stream, clock=lambda: now[0])
    bar(1, 8)  # under a second: nothing
    now[0] = 2.0
    bar(3, 8)
    bar.close()
    assert stream.getvalue() == (
        f"\rlocal:2 [{'#' * 11}{'-' * 19}] 3 of 8 rank traces done   2.0s\n"
    )


def test_without_dask_the_option_says_what_to_install_in_one_line() -> None:
    hidden = (
        "import sys; sys.modules['distributed'] = None; from torchtop.cli import main; "
        f"raise SystemExit(main(['analyze', {str(SAMPLE)!r}, '--cluster', 'local:2']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", hidden], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert result.stderr == 'torchtop: --cluster needs Dask: pip install "torchtop[cluster]"\n'
    assert result.stdout == ""


def test_an_address_where_no_scheduler_answers_is_named_within_seconds() -> None:
    pytest.importorskip("distributed")
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{spare.getsockname()[1]}"
    started = time.monotonic()
    status, out, err = analyze(str(SAMPLE), "--cluster", address)
    assert time.monotonic() - started < 20
    assert (status, out) == (2, "")
    assert err.startswith(f"torchtop: {address}: no Dask scheduler answered within 5 s (")
    assert err.count("\n") == 1


def test_local_needs_a_whole_number_of_workers() -> None:
    status, out, err = analyze(str(SAMPLE), "--cluster", "local:two")
    assert (status, out) == (2, "")
    assert err == "torchtop: --cluster: 'local:two': local:N wants N, a number of workers from 1\n"
