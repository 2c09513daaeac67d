"""The live monitor's tick on a run of many nodes: 64 nodes of 8 ranks (512 agent event files).

What it measures: a run folder shared by `--nodes` launchers (`RUN/nodes/<node>/`, laid out as
`runs.identity` does) is written record by record through the real writers (`JournalWriter`
and the `runs.records` Structs: run.json, hello, settings, steps with `wall_s`/`backward_s`, one
host sample per node per second) at accelerated time: each tick writes one simulated second
(one step per rank per `--step-s`), then the real `LiveMonitor`, whose clock is the simulated
time (as tests/tui/replay.py drives it), ticks over it. Only the tick is timed, not the writing.
Printed: the tick's wall time (median, p95, max) per simulated minute as the run grows, the
median time of the tick's poll (reading the journals, apart from assessing), the process's RSS
(psutil), its slope in MB per simulated minute after `WARMUP_MINUTES` (a least-squares fit) and
peak RSS, and every tick over 100 ms counted (`SLOW`).

The outside truth is what was planted: one straggler rank (its `backward_s` shorter, so its busy
time, wall less backward, is longer: assess.ranks) and one silent rank (stops writing after
`--silent-after` simulated seconds). The final report must name exactly those two: the planted
straggler as the only straggler, the planted silent rank as the only `silent since`. A mismatch
is printed and the script exits 1.

    python benchmarks/many_nodes.py [--nodes 64] [--ranks-per-node 8] [--minutes 30]
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import platform
import pstats
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from torchtop.diagnosis.rules import load_rules
from torchtop.live.watch import LiveMonitor
from torchtop.runs.identity import node_dir
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.nodes import SharedRunWatcher
from torchtop.runs.records import (
    Hello,
    HostProcess,
    HostSample,
    LoaderSettings,
    RunRecord,
    Settings,
    Step,
    ThreadSettings,
)
from torchtop.runs.state import RunState

START_T = 1_700_000_000.0
SLOW_MS = 100.0
WARMUP_MINUTES = 3
"""Simulated minutes before the RSS slope is fitted: the bounded buffers fill in the first
two (512 steps a rank at 5 steps/s)."""
BASE_PID = 7000
"""Every node's ranks have the same pids, as containers start them: the watcher must key them."""


class ManyNodes:
    """The shared run folder, written one simulated second at a time."""

    def __init__(self, root: Path, nodes: int, per_node: int, step_s: float,
                 straggler: int, silent: int, silent_after_s: float) -> None:  # fmt: skip
        self.root, self.nodes, self.per_node, self.step_s = root, nodes, per_node, step_s
        self.straggler, self.silent, self.silent_after_s = straggler, silent, silent_after_s
        self.now_s = 0.0
        self.steps = 0
        self.agents: dict[int, JournalWriter] = {}
        self.hosts: list[JournalWriter] = []
        world = nodes * per_node
        settings = Settings(
            t=START_T, device="cuda:0", amp=True, compiled=False,
            dataloader=LoaderSettings(num_workers=4, pin_memory=True, batch_size=64,
                                      persistent_workers=True, prefetch_factor=2),
            threads=ThreadSettings(torch_num_threads=8, torch_interop_threads=8,
                                   omp_num_threads_env="8"),
        )  # fmt: skip
        for n in range(nodes):
            layout = RunLayout(node_dir(root, self.node(n)))
            layout.create()
            write_record(layout.run_json, RunRecord(
                kind="run", command=["torchrun", "--nnodes", str(nodes), "train.py"],
                pid=BASE_PID - 1, cpu_count=32, started_at=START_T, host=self.node(n),
            ))  # fmt: skip
            self.hosts.append(JournalWriter(layout.samples("host")))
            for local in range(per_node):
                rank = n * per_node + local
                writer = JournalWriter(layout.agent_events(BASE_PID + local))
                self.agents[rank] = writer
                writer.write(Hello(
                    t=START_T, pid=BASE_PID + local, ppid=BASE_PID - 1, rank=rank,
                    local_rank=local, world_size=world, host=self.node(n),
                ))  # fmt: skip
                writer.write(settings)

    @staticmethod
    def node(n: int) -> str:
        return f"node{n:03d}"

    def advance(self, seconds: float) -> None:
        end_s = self.now_s + seconds
        for second in range(math.floor(self.now_s) + 1, math.floor(end_s) + 1):
            for n, host in enumerate(self.hosts):
                host.write(self.host_sample(n, second))
        while (self.steps + 1) * self.step_s <= end_s:
            self.write_steps(self.steps)
            self.steps += 1
        self.now_s = end_s

    def write_steps(self, step: int) -> None:
        end_s = (step + 1) * self.step_s
        for rank, writer in self.agents.items():
            if rank == self.silent and end_s > self.silent_after_s:
                continue
            jitter = 1.0 + 0.03 * math.sin(step * 0.7 + rank)
            # DDP: the walls are equal; the straggler waits least in backward().
            backward = 0.3 if rank == self.straggler else 0.45 + 0.05 * math.sin(step + rank)
            writer.write(Step(
                t=START_T + end_s, step=step, wall_s=self.step_s * jitter,
                data_wait_s=0.01 * self.step_s, backward_s=self.step_s * backward * jitter,
            ))  # fmt: skip

    def host_sample(self, n: int, second: int) -> HostSample:
        processes = [
            HostProcess(pid=BASE_PID + local, ppid=BASE_PID - 1, name="python", role="main",
                        cpu_pct=95.0, rss_bytes=3_000_000_000, threads=20,
                        read_bytes_per_s=0.0, write_bytes_per_s=0.0)
            for local in range(self.per_node)
        ]  # fmt: skip
        cores: list[float | int | None] = [50.0 + (second + c) % 40 for c in range(32)]
        return HostSample(
            t=START_T + second, cpu_pct=round(sum(c or 0 for c in cores) / 32, 1),
            per_cpu_pct=cores, iowait_pct=1.0, mem_used_bytes=90e9, mem_total_bytes=256e9,
            disk_read_bytes_per_s=1e6, disk_write_bytes_per_s=1e5, net_recv_bytes_per_s=1e9,
            net_sent_bytes_per_s=1e9, processes=processes,
        )  # fmt: skip

    def close(self) -> None:
        for writer in [*self.agents.values(), *self.hosts]:
            writer.close()


class TimedWatcher(SharedRunWatcher):
    """The monitor's own watcher, its polls timed: reading the journals apart from assessing."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.poll_ms: list[float] = []

    def poll(self, final: bool = False) -> RunState:
        start = time.perf_counter()
        try:
            return super().poll(final)
        finally:
            self.poll_ms.append((time.perf_counter() - start) * 1000)


def slope_mb_per_min(rss_mb: list[float], skip: int) -> float | None:
    """The least-squares slope of RSS per simulated minute, after `skip` minutes of warm-up."""
    kept = rss_mb[skip:]
    if len(kept) < 2:
        return None
    xs = list(range(len(kept)))
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(kept)
    num = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, kept, strict=True))
    return num / sum((x - mean_x) ** 2 for x in xs)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--ranks-per-node", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=5.0, help="simulated minutes")
    parser.add_argument("--step-s", type=float, default=0.2, help="simulated step time")
    parser.add_argument("--silent-after", type=float, default=60.0, help="simulated seconds")
    parser.add_argument("--profile", action="store_true", help="cProfile the last tick")
    args = parser.parse_args()
    world = args.nodes * args.ranks_per_node
    straggler, silent = world // 3, (2 * world) // 3 + 1
    root = Path(tempfile.mkdtemp(prefix="torchtop-nodes-"))
    proc = psutil.Process()
    try:
        run = ManyNodes(root, args.nodes, args.ranks_per_node, args.step_s,
                        straggler, silent, args.silent_after)  # fmt: skip
        monitor = LiveMonitor(root, load_rules(), kind="run", clock=lambda: run.now_s)
        watcher = monitor.watcher = TimedWatcher(root)
        rss_mb: list[float] = []
        ticks = int(args.minutes * 60)
        walls: list[float] = []
        slow = 0
        print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores, Python {platform.python_version()}")  # fmt: skip
        print(
            f"{args.nodes} nodes x {args.ranks_per_node} ranks = {world} agent event files; "
            f"1 tick = 1 simulated s = {1 / args.step_s:.0f} steps per rank; "
            f"straggler rank {straggler}, silent rank {silent} after {args.silent_after:.0f} s"
        )
        print(
            " minute | ticks | median ms | p95 ms | max ms | slow | poll ms | RSS MB | folder MB"
            " | named"
        )
        real = time.perf_counter()
        minute: list[float] = []
        snapshot = None
        for tick in range(1, ticks + 1):
            run.advance(1.0)
            last = tick == ticks
            profiler = cProfile.Profile() if (last and args.profile) else None
            start = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            snapshot = monitor.tick()
            if profiler is not None:
                profiler.disable()
            wall_ms = (time.perf_counter() - start) * 1000
            walls.append(wall_ms)
            minute.append(wall_ms)
            slow += wall_ms > SLOW_MS
            if tick % 60 == 0 or last:
                size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 1e6
                rss_mb.append(proc.memory_info().rss / 1e6)
                polls = watcher.poll_ms[-len(minute) :]
                print(
                    f" {tick / 60:6.1f} | {len(minute):5d} | {statistics.median(minute):9.1f}"
                    f" | {percentile(minute, 0.95):6.1f} | {max(minute):6.1f}"
                    f" | {sum(m > SLOW_MS for m in minute):4d} | {statistics.median(polls):7.1f}"
                    f" | {rss_mb[-1]:6.0f} | {size:9.1f}"
                    f" | straggler, silent: {named(snapshot.report.ranks)}",
                    flush=True,
                )
                minute = []
            if profiler is not None:
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        run.close()
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
        print(
            f"all {len(walls)} ticks: median {statistics.median(walls):.1f} ms, "
            f"p95 {percentile(walls, 0.95):.1f} ms, max {max(walls):.1f} ms; "
            f"{slow} over {SLOW_MS:.0f} ms{'  SLOW' if slow else ''}; "
            f"peak RSS {peak_mb:.0f} MB; real time {time.perf_counter() - real:.0f} s"
        )
        slope = slope_mb_per_min(rss_mb, WARMUP_MINUTES)
        if slope is not None:
            print(f"RSS slope after {WARMUP_MINUTES} simulated minutes: {slope:+.2f} MB/min")
        print(f"rank analyses made: {monitor.ranks.computed} ({monitor.ranks.computed / ticks:.0f}"
              f" a tick); poll median {statistics.median(watcher.poll_ms):.1f} ms")  # fmt: skip
        assert snapshot is not None
        problems = check(snapshot.report.ranks, straggler, silent, world)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("planted straggler and silent rank named: " + ("yes" if not problems else "NO"))
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


def named(ranks: object) -> tuple[list[int | None], list[int | None]]:
    """The stragglers and the silent ranks the report names."""
    from torchtop.model.report import RankReport

    assert isinstance(ranks, tuple)
    standings = [(r.analysis.rank, r.standing) for r in ranks if isinstance(r, RankReport)]
    slow = [rank for rank, s in standings if s and s.straggler]
    quiet = [rank for rank, s in standings if s and (s.ended or "").startswith("silent")]
    return slow, quiet


def check(ranks: object, straggler: int, silent: int, world: int) -> list[str]:
    assert isinstance(ranks, tuple)
    if len(ranks) != world:
        return [f"report lists {len(ranks)} ranks, not {world}"]
    slow, quiet = named(ranks)
    problems = []
    if slow != [straggler]:
        problems.append(f"stragglers named {slow}, planted [{straggler}]")
    if quiet != [silent]:
        problems.append(f"silent ranks named {quiet}, planted [{silent}]")
    return problems


if __name__ == "__main__":
    raise SystemExit(main())
