"""End to end: real tiny CPU training jobs run under the agent, then their run folder is read.

Each job runs once per module (importing torch takes seconds here) and several tests read it.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.agent.running import Finished, run_job
from torchtop.sessions.offline import analyze_paths

TRACE_NAME = re.compile(r"^(?P<worker>.+)\.(?P<ms>\d{13})\.pt\.trace\.json\.gz$")


@pytest.fixture(scope="module")
def starved(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    run_dir = tmp_path_factory.mktemp("starved") / "run"
    return run_job(
        run_dir,
        "slow_data",
        "--lr",
        "0.2",
        "--shuffle",
        "--exit-status",
        "3",
        extra_env={"TORCHTOP_WINDOW_EVERY_S": "60"},
    )


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    run_dir = tmp_path_factory.mktemp("in_memory") / "run"
    own_trace = run_dir.parent / "own.json"
    return run_job(
        run_dir,
        "in_memory",
        "--steps",
        "60",
        "--own-trace",
        str(own_trace),
        extra_env={"TORCHTOP_WINDOW_EVERY_S": "0.1"},
    )


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    run_dir = tmp_path_factory.mktemp("manual") / "run"
    settings = {"TORCHTOP_WINDOW_EVERY_S": "0", "TORCHTOP_WINDOW_STEPS": "lots"}
    return run_job(run_dir, "manual_steps", extra_env=settings)


def steady_steps(job: Finished) -> list[dict[str, Any]]:
    """Step records after the first (whose wall time is not measured)."""
    return [s for s in job.records("step") if s["wall_s"] is not None]


def test_the_job_prints_the_same_and_exits_with_its_own_status(starved: Finished) -> None:
    assert starved.returncode == 3, starved.stderr
    assert starved.stdout == "trained 14 steps\nlast line from the job\n"


def test_a_job_gets_hello_first_then_settings_and_steps_and_bye_last(starved: Finished) -> None:
    kinds = [r["kind"] for r in starved.records()]
    assert kinds[0] == "hello"
    assert kinds[-1] == "bye"
    assert kinds.count("step") == 14
    assert "settings" in kinds
    assert "note" not in kinds, starved.records("note")
    hello = starved.records("hello")[0]
    assert hello["argv"][1:] == ["--lr", "0.2", "--shuffle", "--exit-status", "3"]
    assert hello["rank"] is None and hello["world_size"] is None
    assert hello["torch"]
    assert [s["step"] for s in starved.records("step")] == list(range(14))


def test_a_job_starved_by_its_dataset_waits_on_data_most_of_each_step(starved: Finished) -> None:
    steps = steady_steps(starved)
    shares = [s["data_wait_s"] / s["wall_s"] for s in steps]
    assert statistics.median(shares) > 0.6
    # 8 samples x 3 ms of sleep per batch.
    assert statistics.median(s["data_wait_s"] for s in steps) >= 0.024
    assert all(s["h2d_s"] is None and s["sync_s"] is None for s in steps)


def test_a_job_on_in_memory_data_waits_on_data_almost_never(in_memory: Finished) -> None:
    steps = steady_steps(in_memory)
    assert len(in_memory.records("step")) == 60
    assert statistics.median(s["data_wait_s"] / s["wall_s"] for s in steps) < 0.1


def test_the_dataloader_settings_are_recorded(starved: Finished) -> None:
    assert starved.last_settings()["dataloader"] == {
        "num_workers": 0,
        "pin_memory": False,
        "batch_size": 8,
        "persistent_workers": False,
        "prefetch_factor": None,
    }


def test_the_script_options_are_recorded_with_their_values(starved: Finished) -> None:
    options = {o["dest"]: o for o in starved.last_settings()["cli_options"]}
    assert options["lr"] == {
        "flags": ["--lr"],
        "dest": "lr",
        "type": "float",
        "default": 0.05,
        "value": 0.2,
    }
    assert options["shuffle"]["type"] == "bool"
    assert options["shuffle"]["value"] is True
    assert options["batch_size"]["flags"] == ["--batch-size"]
    assert options["batch_size"]["value"] == 8
    assert "help" not in options


def test_threads_device_amp_and_compile_are_reported(
    starved: Finished, in_memory: Finished
) -> None:
    settings = starved.last_settings()
    assert settings["threads"]["torch_num_threads"] == 1
    assert settings["device"] == "cpu"
    assert settings["amp"] is False
    assert settings["compiled"] is False
    assert in_memory.last_settings()["amp"] is True


def test_a_profiler_window_is_a_trace_named_like_tensorboard_trace_handler_names_it(
    starved: Finished,
) -> None:
    (window,) = starved.records("window")
    assert (window["first_step"], window["last_step"]) == (5, 8)
    path = starved.run_dir / window["path"]
    match = TRACE_NAME.match(path.name)
    assert match, path.name
    assert match.group("worker") == f"{starved.records('hello')[0]['host']}_{_pid(starved)}"
    assert path.parent == starved.run_dir / "traces"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_the_analyzer_reads_a_window_with_its_step_markers_and_names_the_dataloader(
    starved: Finished,
) -> None:
    (window,) = starved.records("window")
    report = analyze_paths([str(starved.run_dir / window["path"])])
    assert [s.number for s in report.job.steps] == [5, 6, 7, 8]
    assert report.job.metrics["has_step_markers"]
    assert report.job.breakdown["dataloader"] > 0.5
    assert report.verdict.bottleneck == "dataloader"


def test_a_window_open_when_the_job_starts_its_own_profiler_is_dropped(
    in_memory: Finished,
) -> None:
    assert in_memory.returncode == 0, in_memory.stderr
    assert in_memory.stdout == "own trace written\n"
    messages = [n["message"] for n in in_memory.records("note")]
    assert "a profiler window was dropped: the job started its own profiler" in messages


def test_no_window_opens_while_the_job_profiles_itself(in_memory: Finished) -> None:
    windows = in_memory.records("window")
    assert windows
    assert all(w["first_step"] > 10 for w in windows)
    for window in windows:
        assert (in_memory.run_dir / window["path"]).is_file()


def test_dataloader_workers_forked_or_spawned_write_nothing(in_memory: Finished) -> None:
    (only,) = in_memory.event_files()
    assert only.name == f"agent-{_pid(in_memory)}.jsonl"


def test_a_loop_without_an_optimizer_counts_steps_marked_by_torchtop_step(manual: Finished) -> None:
    assert manual.returncode == 0, manual.stderr
    assert manual.stdout == "manual loop done\n"
    steps = manual.records("step")
    assert [s["step"] for s in steps] == list(range(60))
    assert all(s["data_wait_s"] is None for s in steps)
    assert statistics.median(s["wall_s"] for s in steps[1:]) >= 0.025


def test_a_window_is_captured_when_the_dashboard_asks_for_one(manual: Finished) -> None:
    (window,) = manual.records("window")
    assert window["first_step"] > 3
    assert window["last_step"] == window["first_step"] + 3  # the default: 4 steps
    report = analyze_paths([str(manual.run_dir / window["path"])])
    assert len(report.job.steps) == 4


def test_a_bad_setting_is_noted_once_and_replaced_by_its_default(manual: Finished) -> None:
    (note,) = manual.records("note")
    assert note["message"] == "TORCHTOP_WINDOW_STEPS='lots' is not a number >= 1; using 4"


def _pid(job: Finished) -> int:
    pid: int = job.records("hello")[0]["pid"]
    return pid


def test_a_run_folder_has_only_the_agent_files_it_documents(starved: Finished) -> None:
    found = sorted(str(p.relative_to(starved.run_dir)) for p in starved.run_dir.rglob("*"))
    # What the profiler printed during the windows, kept out of the job's stderr (where the
    # torch build prints anything: 2.x CPU builds print a line as each window starts and stops).
    logs = {"logs", f"logs/profiler-{_pid(starved)}.log"}
    assert [f for f in found if f not in logs] == sorted(
        ["events", "traces", f"events/agent-{_pid(starved)}.jsonl"]
        + [str(Path(w["path"])) for w in starved.records("window")]
    )
