"""A run's verdict pools every profiler window: one window that caught a burst is named as the
window that disagrees, and does not decide the run (issue 19 item 4)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CONTEXT
from tests.live.test_live_verdicts import JOBS, run_headless
from torchtop.assess.run import assess
from torchtop.assess.windows import WindowCache
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.nodes import load_shared_run

# Windows back to back (one every 0.2 s after the last closed), the first at step 3.
FREQUENT_WINDOWS = {"TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_EVERY_S": "0.2"}


@pytest.fixture(scope="module")
def burst(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """`copy_burst.py` under `torchtop run --headless`: its folder and its JSON report."""
    folder = tmp_path_factory.mktemp("burst")
    command = [sys.executable, str(JOBS / "copy_burst.py")]
    return folder, run_headless(folder, command, extra_env=FREQUENT_WINDOWS)


def test_a_run_whose_newest_window_is_a_copy_burst_keeps_the_verdict_of_the_others(
    burst: tuple[Path, dict[str, Any]],
) -> None:
    folder, report = burst
    windows = report["windows"]
    assert len(windows) == 9, windows
    classes = [w["bottleneck"] for w in windows]
    assert classes[-1] == "memcpy", windows
    # A 4-step window on a busy machine is a short look: one more may stray, not the most.
    assert classes[:-1].count("cpu") >= 7, windows
    assert report["bottleneck"] == "cpu", (report["verdict"], report["breakdown"])
    assert [w["agrees"] for w in windows] == [c == "cpu" for c in classes]
    first, last = windows[-1]["steps"]
    assert last - first == 3, "a window's first and last profiled step"
    # The premise: the newest window alone, as the verdict used to be made, says memcpy.
    state = load_shared_run(folder / "run")
    newest_only = assess(state, WindowCache().latest(state), load_rules(), context=CONTEXT)
    assert newest_only.verdict.bottleneck == "memcpy"
    text = subprocess.run(
        [sys.executable, "-m", "torchtop", "analyze", str(folder / "run")],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert "verdict pooled from 9 profiler window(s); " in text, text
    assert f"steps {first}-{last} said memcpy" in text, text


def test_the_verdicts_evidence_is_every_profiled_step_of_every_window(
    burst: tuple[Path, dict[str, Any]],
) -> None:
    _, report = burst
    assert report["steps"]["breakdown_steps"] == 4 * len(report["windows"])


def test_per_step_holds_a_breakdown_only_for_the_steps_a_window_profiled(
    burst: tuple[Path, dict[str, Any]],
) -> None:
    _, report = burst
    per_step = report["steps"]["per_step"]
    windowed = {n for w in report["windows"] for n in range(w["steps"][0], w["steps"][1] + 1)}
    profiled = {s["step"] for s in per_step if s["profiled"]}
    assert profiled == windowed & {s["step"] for s in per_step}, per_step
    assert profiled, "the newest window's steps are among the newest steps listed"
    assert len(profiled) < len(per_step), "and so are steps no window profiled"
    for entry in per_step:
        if entry["profiled"]:
            assert set(entry["breakdown"]) >= {"cpu_exec", "memcpy", "other"}
        else:
            # Only what the agent times every step: the DataLoader wait (none here).
            assert set(entry["breakdown"]) <= {"dataloader"}, entry
            assert entry["duration_ms"] > 0
