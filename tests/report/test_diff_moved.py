"""Where `diff` says the time moved: each category's milliseconds per step, split between the
parts of the step the changed settings touch and the rest, and the words that say which part
holds most of the change (a num_workers change whose gain lies in the convolutions was not
what made B faster)."""

from __future__ import annotations

from typing import Any

from torchtop.report.diff_cause_text import ANOTHER_CAUSE, moved_words
from torchtop.report.diff_moved import moved_change, touched_categories


def side(mean_ms: float, **shares: float) -> dict[str, Any]:
    breakdown = {"dataloader": 0.0, "cpu_exec": 0.0, "other": 0.0, **shares}
    return {"steps": {"mean_ms": mean_ms}, "breakdown": breakdown}


WORKERS: list[dict[str, Any]] = [
    {"what": "command", "name": "-j", "a": "0", "b": "2", "option": "workers"},
    {"what": "recorded", "name": "dataloader.num_workers", "a": 0, "b": 2},
]


def test_a_gain_mostly_outside_what_num_workers_touches_is_put_down_to_another_cause() -> None:
    """The ImageNet case: B 18% faster, the DataLoader 5% of A's step; 4 ms of the 15 ms it
    gained in the DataLoader, the rest in cpu_exec, which the change does not touch."""
    a = side(100.0, dataloader=0.05, cpu_exec=0.90, other=0.05)
    b = side(85.0, dataloader=1.0 / 85, cpu_exec=79.0 / 85, other=5.0 / 85)
    moved = moved_change(a, b, WORKERS, known=True)
    assert moved["touched"] == ["dataloader"] and moved["by"] == ["dataloader.num_workers"]
    assert moved["step_change_ms"] == -15.0 and moved["step_change_pct"] == -15.0
    assert moved["touched_change_ms"] == -4.0 and moved["rest_change_ms"] == -11.0
    assert moved["categories"]["cpu_exec"]["change_ms"] == -11.0
    words = moved_words(moved, {"moved": moved})
    assert words.startswith("B's step is 15.0 ms (15.0% of A's) shorter: -4.0 ms in dataloader")
    assert "-11.0 ms in the rest (cpu_exec -11.0 ms)" in words and words.endswith(ANOTHER_CAUSE)


def test_a_gain_where_the_change_acts_is_not_put_down_to_another_cause() -> None:
    a = side(27.0, dataloader=0.9, cpu_exec=0.1)
    b = side(14.0, dataloader=0.75, cpu_exec=0.25)
    moved = moved_change(a, b, WORKERS, known=True)
    assert moved["touched_change_ms"] == -13.8 and moved["rest_change_ms"] == 0.8
    assert ANOTHER_CAUSE not in moved_words(moved, {"moved": moved})


def test_no_setting_differing_puts_all_of_it_down_to_another_cause() -> None:
    moved = moved_change(side(100.0, cpu_exec=1.0), side(80.0, cpu_exec=1.0), [], known=True)
    assert moved["touched"] == [] and moved["rest_change_ms"] == -20.0
    words = moved_words(moved, {"moved": moved})
    assert "no recorded setting differs, so it has another cause: cpu_exec -20.0 ms" in words


def test_without_both_runs_settings_nothing_is_said_of_what_moved_it() -> None:
    moved = moved_change(side(100.0, cpu_exec=1.0), side(80.0, cpu_exec=1.0), [], known=False)
    assert "what moved it is not said" in moved_words(moved, {"moved": moved})


def test_a_change_whose_reach_is_unknown_is_not_split() -> None:
    """A batch size, a device, or a command-line change no recorded setting explains can act on
    every part of the step."""
    for settings in (
        [{"what": "recorded", "name": "dataloader.batch_size", "a": 32, "b": 64}],
        [{"what": "command", "name": "--lr", "a": "0.1", "b": "0.2"}],
        [{"what": "environment", "name": "PYTORCH_CUDA_ALLOC_CONF", "a": None, "b": "x"}],
    ):
        touched, by = touched_categories(settings)
        assert touched is None and len(by) == 1
        moved = moved_change(side(100.0, cpu_exec=1.0), side(80.0, cpu_exec=1.0), settings, True)
        assert moved["touched_change_ms"] is None
        assert moved_words(moved, {"moved": moved}).endswith("any part of the step: not split")


def test_thread_and_library_settings_touch_the_host_math_and_nccl_the_collectives() -> None:
    threads: list[dict[str, Any]] = [
        {"what": "environment", "name": "OMP_NUM_THREADS", "a": "2", "b": "1"},
        {"what": "recorded", "name": "threads.torch_num_threads", "a": 2, "b": 1},
        {"what": "override", "name": "env.NCCL_ALGO", "a": None, "b": "Ring"},
    ]
    touched, by = touched_categories(threads)
    assert touched == {"cpu_exec", "kernel", "other", "communication"}
    assert by == ["OMP_NUM_THREADS", "threads.torch_num_threads", "env.NCCL_ALGO"]


def test_a_side_without_a_breakdown_or_mean_says_why() -> None:
    moved = moved_change({"steps": {"mean_ms": 10.0}}, side(9.0, cpu_exec=1.0), [], known=True)
    assert moved == {"available": False, "why": "a side has no mean step or no breakdown"}


def test_a_contention_finding_on_one_side_is_pointed_at_when_another_cause_is_said() -> None:
    a = side(100.0, dataloader=0.05, cpu_exec=0.95)
    b = side(80.0, dataloader=0.04, cpu_exec=0.96)
    moved = moved_change(a, b, WORKERS, known=True)
    verdict = {"findings_gone": ["cpu-contention", "dataloader-single-process"], "findings_new": []}
    words = moved_words(moved, {"moved": moved, "verdict": verdict})
    assert words.endswith(f"{ANOTHER_CAUSE} (A's report names cpu-contention)")
