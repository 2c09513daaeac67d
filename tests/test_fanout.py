"""Several trace files analysed at once, one forked process per core: the same report as one
process reading them in turn, bad files named the same way, and a dead worker costing a re-read,
never a result."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0
from tests.synthetic import document, two_step_loop, write_json
from torchtop import fanout
from torchtop.analysis.summary import analyze_trace
from torchtop.errors import InputError
from torchtop.report import report_to_json
from torchtop.sessions.offline import analyze_paths
from torchtop.traces.parallel import WORKERS_ENV

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork") or os.uname().sysname != "Linux", reason="the pool is Linux-only"
)


def report(paths: list[Path], workers: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(WORKERS_ENV, workers)
    return report_to_json(analyze_paths([str(p) for p in paths]))


@pytest.fixture
def ranks(tmp_path: Path, shared: Path) -> Path:
    """Four ranks of a real job: the two of HTA's sampled trace and two of torchtop's own."""
    folder = tmp_path / "job"
    folder.mkdir()
    for source in sorted((shared / "hta/trace_filter").glob("*.json.gz")):
        shutil.copy(source, folder / source.name)
    ddp = Path(__file__).resolve().parents[1] / "sample_traces" / "ddp_gloo"
    for source in sorted(ddp.glob("*.json.gz")):
        shutil.copy(source, folder / f"gloo-{source.name}")
    return folder


def test_a_folder_of_ranks_gives_the_same_report_from_the_pool_as_from_one_process(
    ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pooled = report([ranks], "2", monkeypatch)
    alone = report([ranks], "1", monkeypatch)
    assert len(pooled["source"]["paths"]) == 4 and len(pooled["ranks"]) == 2
    assert json.dumps(pooled, sort_keys=True) == json.dumps(alone, sort_keys=True)


def test_the_pool_is_used_and_says_how_far_it_got(
    ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WORKERS_ENV, "2")
    files = sorted(ranks.glob("*.json.gz"))
    seen: list[tuple[str, int, int]] = []

    def progress(path: Path) -> Any:
        return lambda done, total: seen.append((path.name, done, total))

    analyses = list(fanout.analyze_files(files, progress))
    assert [a.infos[0].path for a in analyses] == [str(f) for f in files]
    assert seen == [("4 trace files", k, 4) for k in range(1, 5)]


def test_a_bad_file_among_good_ones_is_skipped_and_named_by_the_pool_as_by_one_process(
    tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = write_json(tmp_path / "a-good.json", document(two_step_loop()))
    bad = tmp_path / "b-bad.json"
    bad.write_bytes(b'{"traceEvents": [1, 2')
    files = [good, bad, shared / RESNET_NW0]
    pooled = report(files, "2", monkeypatch)
    alone = report(files, "1", monkeypatch)
    assert [t["path"] for t in pooled["traces"]] == [str(good), str(shared / RESNET_NW0)]
    assert [n for n in pooled["notes"] if n.startswith("skipped")] == [
        f"skipped {bad}: truncated before its first whole event"
    ]
    assert json.dumps(pooled, sort_keys=True) == json.dumps(alone, sort_keys=True)
    with pytest.raises(InputError) as caught:
        analyze_paths([str(bad)])
    assert caught.value.subject == str(bad)


def test_a_worker_that_dies_costs_a_reread_not_the_result(
    ranks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = report([ranks], "1", monkeypatch)
    real = analyze_trace
    victim = sorted(ranks.glob("*.json.gz"))[1].name
    parent = os.getpid()

    def dies_in_a_worker(trace: Any) -> Any:
        if os.getpid() != parent and trace.info.path.endswith(victim):
            os._exit(9)  # as the kernel's OOM killer would end it
        return real(trace)

    # The workers are forked from this process, so they run the patched function.
    monkeypatch.setattr(fanout, "analyze_trace", dies_in_a_worker)
    assert report([ranks], "2", monkeypatch) == alone


def test_the_pool_is_sized_by_files_cores_memory_and_total_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(WORKERS_ENV, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    monkeypatch.setattr(fanout, "_available_memory", lambda: 64 << 30)
    big = [tmp_path / f"rank{i}.json" for i in range(3)]
    for path in big:
        path.write_bytes(b" " * (5 << 20))  # the size is all the sizing reads
    assert fanout.pool_size(big) == 3  # no more workers than files
    assert fanout.pool_size(big[:1]) == 1
    assert fanout.pool_size([tmp_path / "small.json"] * 2) == 1  # too little to share out
    monkeypatch.setattr(fanout, "_available_memory", lambda: 200 << 20)
    assert fanout.pool_size(big) == 2  # what memory holds at once
    monkeypatch.setattr(fanout, "_available_memory", lambda: 64 << 30)
    huge = tmp_path / "rank9.json"
    huge.write_bytes(b" " * (20 << 20))
    assert fanout.pool_size([*big, huge]) == 1  # one file is most of the work: it gets 2 cores
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert fanout.pool_size(big) == 1  # a thread running (a dashboard): no fork
    monkeypatch.setenv(WORKERS_ENV, "1")
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert fanout.pool_size(big) == 1


def test_pool_workers_end_quietly_on_ctrl_c(ranks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C reaches the whole process group: the workers must die without a traceback each
    (the command itself says `interrupted` once, see test_cli)."""
    monkeypatch.setenv(WORKERS_ENV, "2")
    monkeypatch.setattr(fanout, "analyze_trace", lambda trace: signal.getsignal(signal.SIGINT))
    handlers: list[object] = list(fanout.analyze_files(sorted(ranks.glob("*.json.gz"))))
    assert handlers == [signal.SIG_DFL] * 4
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_DFL  # this process keeps its own


@pytest.mark.parametrize(("cores", "nested"), [(2, False), (8, True)])
def test_a_worker_reads_on_two_cores_only_when_there_are_cores_to_spare(
    ranks: Path, monkeypatch: pytest.MonkeyPatch, cores: int, nested: bool
) -> None:
    """Two files on 2 cores: each worker reads alone. On 8 cores, two workers leave four cores
    over, and each may fork its own reading worker for a big file (as outside the pool)."""
    monkeypatch.setenv(WORKERS_ENV, "2")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)))
    monkeypatch.setattr(fanout, "analyze_trace", lambda trace: os.environ.get(WORKERS_ENV))
    settings: list[object] = list(fanout.analyze_files(sorted(ranks.glob("*.json.gz"))[:2]))
    assert settings == (["2", "2"] if nested else ["1", "1"])
