"""analyze_paths: files of one worker are pooled, files of several ranks are compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.synthetic import Loop, document, two_step_loop, write_json
from torchtop.errors import InputError
from torchtop.report import report_to_json
from torchtop.sessions.offline import analyze_paths


def slow_loop(step_us: float, steps: int = 3) -> list[dict]:  # type: ignore[type-arg]
    loop = Loop()
    for number in range(1, steps + 1):
        at = (number - 1) * step_us
        loop.step(number, at, step_us).op("aten::conv2d", at, step_us / 2)
        loop.launch(at + 1, 2, device_ts=at + 5, device_dur=step_us / 2)
    return loop.events


def test_files_of_one_worker_are_pooled_into_one_rank(tmp_path: Path) -> None:
    write_json(tmp_path / "worker0.1700000000001.pt.trace.json", document(two_step_loop()))
    write_json(tmp_path / "worker0.1700000000002.pt.trace.json.gz", document(two_step_loop()))
    report = report_to_json(analyze_paths([str(tmp_path)]))
    assert len(report["traces"]) == 2
    assert "ranks" not in report
    assert [s["step"] for s in report["steps"]["per_step"]] == [1, 2, 1, 2]
    assert report["breakdown"]["dataloader"] == pytest.approx(0.2)


def test_pooled_step_statistics_are_computed_over_all_the_pooled_steps(tmp_path: Path) -> None:
    write_json(tmp_path / "worker0.1700000000001.pt.trace.json", document(slow_loop(100.0, 2)))
    write_json(tmp_path / "worker0.1700000000002.pt.trace.json", document(slow_loop(300.0, 2)))
    report = report_to_json(analyze_paths([str(tmp_path)]))
    durations = [s["duration_ms"] for s in report["steps"]["per_step"]]
    assert durations == pytest.approx([0.1, 0.1, 0.3, 0.3])
    assert report["steps"]["count"] == 4
    assert report["steps"]["p50_ms"] == pytest.approx(0.2)


def test_ranks_of_one_job_are_compared_and_the_slowest_named(tmp_path: Path) -> None:
    for rank, step_us in ((0, 100.0), (1, 200.0)):
        info = {"backend": "nccl", "rank": rank, "world_size": 2}
        write_json(
            tmp_path / f"trace_{rank}.json", document(slow_loop(step_us), distributedInfo=info)
        )
    report = report_to_json(analyze_paths([str(tmp_path)]))
    assert [r["label"] for r in report["ranks"]] == ["rank 0", "rank 1"]
    assert [r["steps"]["mean_ms"] for r in report["ranks"]] == pytest.approx([0.1, 0.2])
    assert report["metrics"]["ranks_count"] == 2
    assert report["metrics"]["slowest_rank"] == "rank 1"
    assert report["metrics"]["rank_step_spread"] == pytest.approx((0.2 - 0.1) / 0.15)
    assert report["metrics"]["world_size"] == 2


def test_the_rank_comes_from_the_file_name_when_the_trace_does_not_say(tmp_path: Path) -> None:
    write_json(tmp_path / "rank-3.json", document(two_step_loop()))
    write_json(tmp_path / "rank_12.json", document(two_step_loop()))
    report = report_to_json(analyze_paths([str(tmp_path)]))
    assert [r["rank"] for r in report["ranks"]] == [3, 12]  # numeric order, not name order


def test_paths_are_read_in_the_order_given_and_folders_sorted(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    b = write_json(folder / "b.json", document(two_step_loop()))
    a = write_json(folder / "a.json", document(two_step_loop()))
    (folder / "notes.txt").write_text("ignored")
    single = write_json(tmp_path / "z.json", document(two_step_loop()))
    report = analyze_paths([str(single), str(folder)])
    assert report.paths == (str(single), str(a), str(b))


def test_a_missing_path_among_others_is_named(tmp_path: Path) -> None:
    good = write_json(tmp_path / "a.json", document(two_step_loop()))
    with pytest.raises(InputError, match=r"missing\.json: no such file"):
        analyze_paths([str(good), str(tmp_path / "missing.json")])
