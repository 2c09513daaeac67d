"""Windows open after warm-up, then every so often, and when the dashboard asks."""

from __future__ import annotations

import os
import time
from pathlib import Path

from torchtop.agent.window_plan import RequestWatcher, WindowPlan
from torchtop.runs.layout import RunLayout


def test_the_first_window_waits_for_the_warm_up_steps() -> None:
    plan = WindowPlan(every_s=30, first_step=5)
    assert not plan.due(next_step=4, now_s=100.0)
    assert plan.due(next_step=5, now_s=100.0)


def test_the_next_window_is_due_a_period_after_the_last_one_closed() -> None:
    plan = WindowPlan(every_s=30, first_step=5)
    plan.opened()
    plan.closed(now_s=100.0)
    assert not plan.due(next_step=50, now_s=129.0)
    assert plan.due(next_step=50, now_s=130.0)


def test_a_zero_period_turns_periodic_windows_off_but_a_request_still_opens_one() -> None:
    plan = WindowPlan(every_s=0, first_step=5)
    assert not plan.due(next_step=10, now_s=100.0)
    plan.requested = True
    assert plan.due(next_step=10, now_s=100.0)
    plan.opened()
    assert not plan.due(next_step=10, now_s=100.0)


def test_a_disabled_plan_never_opens_a_window() -> None:
    plan = WindowPlan(every_s=30, first_step=0, requested=True, disabled=True)
    assert not plan.due(next_step=10, now_s=100.0)


def test_a_request_is_answered_once_per_touch_of_the_file(tmp_path: Path) -> None:
    request = RunLayout(tmp_path).window_request
    watcher = RequestWatcher(request, since_ns=time.time_ns() - 10**9)
    assert not watcher.poll()
    request.parent.mkdir()
    request.touch()
    assert watcher.poll()
    assert not watcher.poll()
    later_ns = os.stat(request).st_mtime_ns + 10**9
    os.utime(request, ns=(later_ns, later_ns))
    assert watcher.poll()


def test_a_request_older_than_the_process_is_ignored(tmp_path: Path) -> None:
    request = RunLayout(tmp_path).window_request
    request.parent.mkdir()
    request.touch()
    watcher = RequestWatcher(request, since_ns=os.stat(request).st_mtime_ns)
    assert not watcher.poll()
