"""Which trace files are ranks of one job (`analysis.jobs`), through
`sessions.offline.analyze_jobs` on tiny hand-written traces: each rule that keeps files
together or apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.synthetic import Loop, document, write_json
from torchtop.model.report import JobReports
from torchtop.sessions.offline import analyze_jobs


def steps(*numbers: int) -> list[dict[str, Any]]:
    loop = Loop()
    for position, number in enumerate(numbers):
        loop.standard_step(number, position * 100.0)
    return loop.events


def rank(number: int, world_size: int = 2, backend: str = "nccl") -> dict[str, Any]:
    return {"distributedInfo": {"rank": number, "world_size": world_size, "backend": backend}}


def jobs_of(folder: Path) -> JobReports:
    return analyze_jobs([str(folder)])[0]


def files_per_job(jobs: JobReports) -> list[list[str]]:
    return [[Path(p).name for p in report.paths] for report in jobs.reports]


def test_ranks_of_one_world_that_profiled_the_same_steps_are_one_job(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", document(steps(5, 6), **rank(0)))
    write_json(tmp_path / "b.json", document(steps(5, 6), **rank(1)))
    jobs = jobs_of(tmp_path)
    assert files_per_job(jobs) == [["a.json", "b.json"]]
    assert jobs.reports[0].job.label == "2 ranks" and jobs.apart == ()


def test_traces_without_a_rank_are_each_a_job_of_their_own(tmp_path: Path) -> None:
    write_json(tmp_path / "bert.json", document(steps(5, 6)))
    write_json(tmp_path / "resnet.json", document(steps(5, 6)))
    jobs = jobs_of(tmp_path)
    assert files_per_job(jobs) == [["bert.json"], ["resnet.json"]]
    assert [r.job.label for r in jobs.reports] == ["bert.json", "resnet.json"]
    assert jobs.apart == ("no rank recorded (Kineto's distributedInfo)",)


def test_spans_of_one_worker_are_pooled_but_the_same_steps_twice_are_two_runs(
    tmp_path: Path,
) -> None:
    write_json(tmp_path / "worker0.1700000000001.pt.trace.json", document(steps(1, 2)))
    write_json(tmp_path / "worker0.1700000000002.pt.trace.json", document(steps(6, 7)))
    assert files_per_job(jobs_of(tmp_path)) == [
        ["worker0.1700000000001.pt.trace.json", "worker0.1700000000002.pt.trace.json"]
    ]
    write_json(tmp_path / "worker0.1700000000003.pt.trace.json", document(steps(6, 7)))
    jobs = jobs_of(tmp_path)
    assert len(jobs.reports) == 2
    assert jobs.apart == ("the same steps profiled twice by one rank or worker",)


def test_later_windows_of_ranks_need_not_line_up_once_their_first_ones_did(
    tmp_path: Path,
) -> None:
    # The agent opens every rank's first window at the same step, the later ones by each
    # rank's own clock.
    write_json(tmp_path / "r0.1.json", document(steps(5, 6), **rank(0)))
    write_json(tmp_path / "r0.2.json", document(steps(120, 121), **rank(0)))
    write_json(tmp_path / "r1.1.json", document(steps(5, 6), **rank(1)))
    write_json(tmp_path / "r1.2.json", document(steps(125, 126), **rank(1)))
    jobs = jobs_of(tmp_path)
    assert len(jobs.reports) == 1 and jobs.apart == ()
    assert [r.analysis.label for r in jobs.reports[0].ranks] == ["rank 0", "rank 1"]


def test_ranks_of_different_world_sizes_are_different_jobs(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", document(steps(5, 6), **rank(0, world_size=8)))
    write_json(tmp_path / "b.json", document(steps(5, 6), **rank(1, world_size=2)))
    write_json(tmp_path / "c.json", document(steps(5, 6), **rank(0, world_size=2)))
    jobs = jobs_of(tmp_path)
    assert files_per_job(jobs) == [["a.json"], ["b.json", "c.json"]]
    assert jobs.apart == ("different world sizes or backends (8 nccl and 2 nccl)",)


def test_ranks_with_no_step_in_common_are_different_jobs(tmp_path: Path) -> None:
    write_json(tmp_path / "a.json", document(steps(5, 6), **rank(0)))
    write_json(tmp_path / "b.json", document(steps(105, 106), **rank(1)))
    jobs = jobs_of(tmp_path)
    assert files_per_job(jobs) == [["a.json"], ["b.json"]]
    assert jobs.apart == ("no step in common (#5-#6 and #105-#106)",)


def test_ranks_on_different_gpu_models_are_different_jobs(tmp_path: Path) -> None:
    for name, gpu in (("a.json", "NVIDIA H100"), ("b.json", "Tesla V100")):
        devices = {"deviceProperties": [{"id": 0, "name": gpu}]}
        write_json(tmp_path / name, document(steps(5, 6), **rank(int(name < "b")), **devices))
    jobs = jobs_of(tmp_path)
    assert files_per_job(jobs) == [["a.json"], ["b.json"]]
    assert jobs.apart == ("different GPUs (NVIDIA H100 and Tesla V100)",)


def test_one_job_pools_every_trace_given(tmp_path: Path) -> None:
    write_json(tmp_path / "bert.json", document(steps(5, 6)))
    write_json(tmp_path / "resnet.json", document(steps(5, 6)))
    jobs = analyze_jobs([str(tmp_path)], one_job=True)[0]
    assert files_per_job(jobs) == [["bert.json", "resnet.json"]]
    assert jobs.reports[0].job.label == "2 ranks"
