"""The live loop on a simulated clock: `watch` and `LiveMonitor` read time only through the
clock and the sleep they are given, so a replayed run shows exactly when they tick and end."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.conftest import CONTEXT
from tests.tui.replay import SyntheticRun, dataloader_bound, rules
from torchtop.assess.run import WARMUP_STEPS, assess
from torchtop.diagnosis.rules import RuleTree
from torchtop.live.watch import LiveMonitor, watch
from torchtop.model.analysis import RankAnalysis
from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.runs.state import RunState


def test_watch_ticks_once_an_interval_until_for_s_has_passed_then_reads_everything(
    tmp_path: Path,
) -> None:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())
    monitor = LiveMonitor(run.root, rules(), for_s=5.0, kind="demo", clock=lambda: run.now_s)
    elapsed: list[float] = []
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        run.advance(seconds)

    def on_update(report: Report, shown: Verdict, elapsed_s: float) -> None:
        elapsed.append(elapsed_s)

    final = watch(monitor, on_update, interval_s=1.0, sleep=sleep)
    assert elapsed == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert slept == [1.0] * 5
    assert final.verdict.bottleneck == "dataloader"
    # Five simulated seconds of 0.125 s steps: 40, less the warm-up the figures leave out.
    assert final.job.metrics["steps_count"] == 40 - WARMUP_STEPS


def test_watch_sleeps_only_what_is_left_of_the_interval_after_a_slow_tick(
    tmp_path: Path,
) -> None:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())

    def slow_assess(
        state: RunState, windows: Mapping[int, RankAnalysis], tree: RuleTree, kind: str
    ) -> Report:
        run.advance(0.25)  # the assessment itself takes a quarter of a simulated second
        return assess(state, windows, tree, kind, context=CONTEXT)

    monitor = LiveMonitor(
        run.root, rules(), for_s=2.0, assessor=slow_assess, clock=lambda: run.now_s
    )
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        run.advance(seconds)

    watch(monitor, interval_s=1.0, sleep=sleep)
    assert slept == [0.75, 0.75]


def test_time_after_detach_does_not_count_against_for_s(tmp_path: Path) -> None:
    run = SyntheticRun(tmp_path / "run", dataloader_bound())
    monitor = LiveMonitor(run.root, rules(), for_s=3.0, clock=lambda: run.now_s)
    run.advance(2.0)
    assert not monitor.tick().finished
    assert monitor.detach() is None
    run.advance(10.0)
    held = monitor.tick()
    assert held.elapsed_s == 12.0 and not held.finished
