"""A drift names what moved with it in the run's samples, and only what moved past its bar."""

from __future__ import annotations

from pathlib import Path

from torchtop.assess.long_run_drift import changed_with
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import GpuDevice, GpuSample, HostSample
from torchtop.runs.state import RunState


def _state(clock_after: float, others_after: float) -> RunState:
    state = RunState(RunLayout(Path("unused")))
    for second in range(100):
        late = second >= 60
        device = GpuDevice(
            index=0, sm_clock_mhz=clock_after if late else 1980, temperature_c=70 if late else 68
        )
        state.samples.add(GpuSample(t=float(second), devices=[device]))
        state.samples.add(HostSample(t=float(second), others_cpu_pct=others_after if late else 3))
    return state


def test_a_throttled_clock_and_a_busy_neighbour_are_named_with_the_drift() -> None:
    said = changed_with(_state(1410, 95), pid=1, split_t=60.0)
    assert said == "GPU 0 SM clock 1980 -> 1410 MHz; other processes' CPU 3% -> 95% of a core"


def test_nothing_past_its_bar_is_said_as_nothing() -> None:
    said = changed_with(_state(1950, 10), pid=1, split_t=60.0)
    assert said == "no clock, temperature, other load or memory moved"
