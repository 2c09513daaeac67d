"""The nodes panel of a run several launchers share: one row per node from its own newest
samples, side by side; a dead rank's last stack under its line in the ranks panel; neither
shown for a run of one launcher (the existing snapshots hold that)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.tui.conftest import panel_text
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import (
    Bye,
    ExitRecord,
    GpuDevice,
    GpuSample,
    Hello,
    HostSample,
    RunRecord,
    StackFrame,
    StackProcess,
    StacksSample,
    StackThread,
    Step,
)
from torchtop.sessions.offline import analyze_and_load
from torchtop.tui.app import Dashboard
from torchtop.tui.frame import offline_frame
from torchtop.tui.noderows import NodeRow
from torchtop.tui.widgets.nodes import NodesPanel

T0 = 1_700_000_000.0
STEPS = 30
# Per node: its ranks (pid, rank, wait in backward ms), CPU %, memory, GPU util, how it ended.
NODES: dict[str, dict[str, Any]] = {
    "a": {"ranks": [(100, 0, 40.0), (101, 1, 0.0)], "cpu": [50.0, 62.0], "gpu": 90.0},
    "b": {"ranks": [(100, 2, 40.0), (102, 3, 40.0)], "cpu": [30.0, 17.0], "gpu": None},
}
FRAMES = [
    StackFrame(function="_engine_run_backward", file="/v/site-packages/torch/graph.py", line=9),
    StackFrame(function="train", file="/home/u/train.py", line=56),
]
Compare = Callable[..., bool]


def write_node(root: Path, name: str, spec: dict[str, Any]) -> None:
    layout = RunLayout(root / "nodes" / name)
    layout.create()
    command = ["torchrun", "--nnodes", "2", "train.py"]
    write_record(layout.run_json, RunRecord(kind="run", command=command, host=f"node-{name}"))
    for pid, rank, wait_ms in spec["ranks"]:
        with JournalWriter(layout.agent_events(pid)) as agent:
            agent.write(Hello(t=T0, pid=pid, rank=rank, world_size=4))
            for n in range(STEPS):
                t = T0 + (n + 1) * 0.1
                agent.write(Step(step=n, wall_s=0.1, t=t, backward_s=wait_ms / 1000))
            killed = rank == 2
            bye = Bye(t=T0 + 4.0, reason="seen by parent" if killed else "exit")
            if killed:
                bye.signal = "SIGKILL"
            else:
                bye.exit_code = 1
            agent.write(bye)
    with JournalWriter(layout.samples("host")) as host:
        for i, cpu in enumerate(spec["cpu"]):
            host.write(HostSample(t=T0 + i, cpu_pct=cpu, mem_used_bytes=(i + 2) * 1e9))
    if spec["gpu"] is not None:
        with JournalWriter(layout.samples("gpu")) as gpu:
            devices = [GpuDevice(index=i, utilization_gpu_pct=spec["gpu"] + i) for i in (0, 1)]
            gpu.write(GpuSample(t=T0 + 1, devices=devices))
    with JournalWriter(layout.samples("stacks")) as stacks:
        thread = StackThread(tid=100, name="MainThread", frames=FRAMES)
        stacks.write(StacksSample(t=T0 + 2, processes=[StackProcess(pid=100, threads=[thread])]))
    write_record(layout.exit_json, ExitRecord(ended_at=T0 + 5, how="crashed", exit_status=1))


@pytest.fixture
def shared_app(tmp_path: Path) -> Dashboard:
    root = tmp_path / "run"
    for name, spec in NODES.items():
        write_node(root, name, spec)
    report, state = analyze_and_load([str(root)])
    assert state is not None
    return Dashboard(frame=offline_frame(report, state))


def test_each_node_has_a_row_of_its_own_newest_counters_and_its_ranks_rate(
    shared_app: Dashboard,
) -> None:
    frame = shared_app.latest
    assert frame is not None
    assert frame.nodes == (
        NodeRow("a", (0, 1), 62.0, 3e9, 90.5, pytest.approx(10.0), "crashed"),  # type: ignore[arg-type]
        NodeRow("b", (2, 3), 17.0, 3e9, None, pytest.approx(10.0), "crashed"),  # type: ignore[arg-type]
    )


async def test_the_panel_shows_the_nodes_side_by_side_and_the_dead_ranks_last_stack(
    shared_app: Dashboard,
) -> None:
    async with shared_app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()  # the sections sized to the screen
        assert shared_app.query_one(NodesPanel).display
        nodes = panel_text(shared_app, "#nodes").splitlines()
        assert nodes[1].split() == ["a", "0,1", "62%", "3.0G", "90%", "10.0", "crashed"]
        assert nodes[2].split() == ["b", "2,3", "17%", "3.0G", "n/a", "10.0", "crashed"]
        ranks = panel_text(shared_app, "#ranks")
        assert "rank 2" in ranks and "signal SIGKILL" in ranks
        assert "↳ last stack 22:13:22 train (train.py:56)" in ranks  # the job's own frame


async def test_a_run_of_one_launcher_has_no_nodes_panel(offline_app: Dashboard) -> None:
    async with offline_app.run_test(size=(160, 48)):
        assert not offline_app.query_one(NodesPanel).display


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_a_two_node_run_with_a_killed_rank_looks_right(
    snap_compare: Compare, shared_app: Dashboard, size: tuple[int, int]
) -> None:
    assert snap_compare(shared_app, terminal_size=size)
