"""The module timer on real `nn.Module`s, on a clock the test moves: each module's forward
counted with and without the modules inside it, only on the stepping thread, and no hook left
once it is removed."""

from __future__ import annotations

import threading

import pytest
import torch
from torch import nn
from torch.nn.modules import module as torch_module

from torchtop.agent.module_period import ModulePeriod
from torchtop.agent.module_timer import ModuleTimer
from torchtop.agent.step_clock import EndedStep


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


class Costs(nn.Module):
    """A forward that moves the test's clock by `ms` (or raises, when `fails`)."""

    def __init__(self, clock: FakeClock, ms: float, fails: bool = False) -> None:
        super().__init__()
        self.clock, self.ms, self.fails = clock, ms, fails

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.clock.now_s += self.ms / 1000
        if self.fails:
            raise ValueError("planted")
        return x


def global_hooks() -> int:
    return len(torch_module._global_forward_pre_hooks) + len(torch_module._global_forward_hooks)


def by_path(timer: ModuleTimer) -> dict[str, tuple[int, float, float]]:
    return {t.path: (t.calls, t.forward_s * 1000, t.forward_self_s * 1000) for t in timer.timings()}


def test_nested_modules_are_timed_with_and_without_the_modules_inside_them() -> None:
    clock = FakeClock()
    model = nn.Sequential(Costs(clock, 20), nn.Sequential(Costs(clock, 5), Costs(clock, 1)))
    timer = ModuleTimer(threading.get_ident(), clock)
    timer.install()
    for _ in range(3):
        model(torch.zeros(1))
        timer.step_ended()
    timer.remove()
    found = by_path(timer)
    assert found["Sequential_0/Costs_0"] == pytest.approx((3, 60.0, 60.0))
    assert found["Sequential_0/Sequential_1/Costs_1"] == pytest.approx((3, 15.0, 15.0))
    assert found["Sequential_0/Sequential_1/Costs_2"] == pytest.approx((3, 3.0, 3.0))
    assert found["Sequential_0/Sequential_1"] == pytest.approx((3, 18.0, 0.0))
    assert found["Sequential_0"] == pytest.approx((3, 78.0, 0.0))


def test_once_removed_no_global_or_module_hook_is_left() -> None:
    clock = FakeClock()
    model = nn.Sequential(Costs(clock, 1), nn.Linear(2, 2))
    before = global_hooks()
    timer = ModuleTimer(threading.get_ident(), clock)
    timer.install()
    assert global_hooks() == before + 2
    model(torch.zeros(2))
    timer.remove()
    assert global_hooks() == before
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    assert not timer.installed


def test_a_forward_that_raises_is_timed_and_leaves_no_call_open_under_the_next() -> None:
    clock = FakeClock()
    inner = Costs(clock, 4, fails=True)
    outer = nn.Sequential(Costs(clock, 2))
    timer = ModuleTimer(threading.get_ident(), clock)
    timer.install()
    with pytest.raises(ValueError, match="planted"):
        inner(torch.zeros(1))
    outer(torch.zeros(1))
    outer(torch.zeros(1))
    timer.remove()
    found = by_path(timer)
    assert found["Costs_0"] == pytest.approx((1, 4.0, 4.0))
    assert found["Sequential_0"] == pytest.approx((2, 4.0, 0.0))
    assert found["Sequential_0/Costs_1"] == pytest.approx((2, 4.0, 4.0))


def test_a_forward_that_began_before_the_hooks_leaves_the_calls_inside_it_alone() -> None:
    clock = FakeClock()
    timer = ModuleTimer(threading.get_ident(), clock)

    class InstallsMidway(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            timer.install()
            out: torch.Tensor = inner(x)
            return out

    inner = nn.Sequential(Costs(clock, 3))
    InstallsMidway()(torch.zeros(1))
    timer.remove()
    found = by_path(timer)
    assert found == {
        "Sequential_0/Costs_0": pytest.approx((1, 3.0, 3.0)),
        "Sequential_0": pytest.approx((1, 3.0, 0.0)),
    }


def test_modules_called_on_another_thread_are_not_timed() -> None:
    clock = FakeClock()
    model = Costs(clock, 3)
    timer = ModuleTimer(threading.get_ident(), clock)
    timer.install()
    worker = threading.Thread(target=model, args=(torch.zeros(1),))
    worker.start()
    worker.join()
    timer.remove()
    assert timer.timings() == []


def ended(step: int, wall_s: float) -> EndedStep:
    """A step as the step clock releases it (the fields the period does not read are None)."""
    return EndedStep(
        kind="step", step=step, wall_s=wall_s, data_wait_s=None, data_cpu_s=None, h2d_s=None,
        sync_s=None, backward_s=None, end_s=0.0,
    )  # fmt: skip


def test_a_period_counts_only_its_own_steps_and_sums_their_wall_time() -> None:
    period = ModulePeriod(first_step=10, steps=2, thread=threading.get_ident())
    started = period.start()
    assert (started.first_step, started.steps) == (10, 2)
    assert not period.step_ended([ended(9, 5.0), ended(10, 0.25)])
    assert period.step_ended([ended(11, 0.5)])
    nn.Linear(2, 2)(torch.zeros(2))
    times = period.finish("cpu")
    assert times is not None
    assert (times.first_step, times.last_step, times.steps, times.wall_s) == (10, 11, 2, 0.75)
    assert [m.path for m in times.modules] == ["Linear_0"]
    assert global_hooks() == 0


def test_a_period_cut_before_any_step_writes_nothing() -> None:
    period = ModulePeriod(first_step=3, steps=20, thread=threading.get_ident())
    period.start()
    assert period.finish("cpu") is None
    assert global_hooks() == 0
