"""What the live view keeps of each rank between ticks (`assess.rank_cache`): redone when, and
only when, a rank has new records, the same answers as assessing afresh, and bounded however
long a shared run goes on. The folders are written with the real writers and read by the real
watchers; the reference is the plain, uncached assessment of the same state."""

from __future__ import annotations

import math
import tracemalloc
from pathlib import Path

import msgspec

from tests.conftest import CONTEXT
from tests.fake_run import FakeRun
from torchtop.assess.rank_cache import RankCache
from torchtop.assess.ranks import HOST_SAMPLES_READ
from torchtop.assess.run import RECENT_STEPS, WARMUP_STEPS, assess
from torchtop.diagnosis.rules import load_rules
from torchtop.live.watch import RANKS_REFRESHED_PER_TICK, LiveMonitor
from torchtop.model.report import Report
from torchtop.runs.journal import JournalWriter
from torchtop.runs.nodes import SHARED_MAX_SAMPLES, SHARED_MAX_STEPS, SharedRunWatcher
from torchtop.runs.records import HostSample, Step
from torchtop.runs.state import MAX_SAMPLES, RunWatcher, load_run
from torchtop.tui.frame import SAMPLES_KEPT

TREE = load_rules()


def json_of(report: Report) -> bytes:
    return msgspec.json.encode(report)


def write_steps(run: FakeRun, pids: list[int], first: int, count: int, slow: int = -1) -> None:
    """`count` steps of every pid, the same numbers on each; `slow` waits least in backward()."""
    for number in range(first, first + count):
        run.t += 0.2
        for pid in pids:
            backward = 0.05 if pid == slow else 0.09 + 0.01 * math.sin(number + pid)
            step = Step(t=run.t, step=number, wall_s=0.2, data_wait_s=0.01, backward_s=backward)
            run.agent(pid).write(step)


def ranks_run(root: Path, pids: list[int], first_rank: int = 0) -> FakeRun:
    run = FakeRun(root)
    for rank, pid in enumerate(pids, first_rank):
        run.hello(pid, rank=rank)
    return run


def test_a_ranks_assessment_is_redone_when_and_only_when_it_has_new_records(
    tmp_path: Path,
) -> None:
    pids = [100, 101, 102]
    run = ranks_run(tmp_path / "run", pids)
    write_steps(run, pids, 0, 40, slow=101)
    watcher, cache = RunWatcher(run.layout.root), RankCache()
    first = assess(watcher.poll(), {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 3
    again = assess(watcher.poll(), {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 3  # nothing new: every rank's analysis kept
    assert json_of(again) == json_of(first)
    assert all(a.analysis is b.analysis for a, b in zip(first.ranks, again.ranks, strict=True))
    # One more step of rank 1 only: rank 1 is redone, ranks 0 and 2 are not.
    run.t += 0.2
    run.agent(101).write(Step(t=run.t, step=40, wall_s=0.3, data_wait_s=0.01, backward_s=0.05))
    state = watcher.poll()
    changed = assess(state, {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 4
    kept = [a.analysis is b.analysis for a, b in zip(again.ranks, changed.ranks, strict=True)]
    assert kept == [True, False, True]
    assert changed.ranks[1].analysis.metrics["steps_count"] == 39  # 41 less the warm-up
    # And the cached report is the one a fresh assessment makes of the same records.
    assert json_of(changed) == json_of(assess(state, {}, TREE, context=CONTEXT))


def test_above_the_refresh_budget_the_stalest_ranks_are_redone_and_the_final_redoes_all(
    tmp_path: Path,
) -> None:
    pids = [100, 101, 102, 103]
    run = ranks_run(tmp_path / "run", pids)
    write_steps(run, pids, 0, 20)
    watcher, cache = RunWatcher(run.layout.root), RankCache(refresh_per_tick=2)
    assess(watcher.poll(), {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 4  # ranks never seen are always done
    write_steps(run, pids, 20, 5)
    assess(watcher.poll(), {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 6  # two of the four due
    assess(watcher.poll(), {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 8  # the other two, stalest first; then all are fresh
    state = watcher.poll()
    fresh = assess(state, {}, TREE, cache=cache, context=CONTEXT)
    assert cache.computed == 8
    write_steps(run, pids, 25, 5)
    state = watcher.poll()
    final = assess(state, {}, TREE, cache=cache, refresh_all=True, context=CONTEXT)
    assert cache.computed == 12
    assert json_of(final) == json_of(assess(state, {}, TREE, context=CONTEXT)) != json_of(fresh)


def test_a_long_shared_runs_kept_state_does_not_grow(tmp_path: Path) -> None:
    pids = [100, 101]
    nodes = [ranks_run(tmp_path / "nodes" / name, pids, 2 * n) for n, name in enumerate("ab")]
    hosts = [JournalWriter(n.layout.samples("host")) for n in nodes]
    second = [0]

    def advance(steps: int) -> None:
        for _ in range(steps // 5):
            second[0] += 1
            for run, host in zip(nodes, hosts, strict=True):
                # The planted straggler: rank 3, node b's second process.
                write_steps(run, pids, (second[0] - 1) * 5, 5, slow=101 if run is nodes[1] else -1)
                host.write(HostSample(t=run.t, cpu_pct=50.0, mem_used_bytes=1e9))

    monitor = LiveMonitor(tmp_path, TREE, clock=lambda: float(second[0]))
    tracemalloc.start()
    advance(1500)  # past every bound: 512 steps a rank, 300 host samples a node
    monitor.tick()
    before, _ = tracemalloc.get_traced_memory()
    for _ in range(4):
        advance(500)  # to 3500 steps: below 4096, where each rank's array of walls doubles
        snapshot = monitor.tick()
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    state = snapshot.state
    assert [len(p.steps) for p in state.training_processes] == [SHARED_MAX_STEPS] * 4
    assert [len(n.samples.host) for n in state.nodes.values()] == [SHARED_MAX_SAMPLES] * 2
    assert [s.straggler for s in (r.standing for r in snapshot.report.ranks) if s] == [
        False, False, False, True,
    ]  # fmt: skip
    # 2000 more steps of 4 ranks kept whole would be ~2 MB; kept bounded, what grows is each
    # step's wall (8 bytes, in arrays allocated ahead) and an hour's figures of each host
    # sample (two numbers, ~64 bytes: 51 KB here). Measured: ~140 KB before the per-step list
    # kept only measured parts, ~150 KB since (more dicts alive at the end, as much more at 4,
    # 8 or 16 ticks: not growth). Each step's busy time kept in blocks of 10 for the straggler
    # judgement (`runs.step_blocks`: 76 bytes a block with its medians, arrays of 256 blocks
    # doubled) adds ~60 KB for 4 ranks crossing 256 blocks here: measured 213 KB in all.
    # Each step's end time (8 bytes, for the long run's stalls: `runs.state.Walls`) adds up to
    # 64 KB for 2000 steps of 4 ranks, in arrays allocated ahead: measured 235 KB in all.
    assert after - before < 300_000


def test_a_nodes_summary_kept_as_figures_is_the_mean_of_its_newest_hour_of_samples(
    tmp_path: Path,
) -> None:
    run = ranks_run(tmp_path / "nodes" / "a", [100, 101])
    write_steps(run, [100, 101], 0, 20)
    cpus = [None if i % 7 == 0 else 10.0 + (i * 37) % 90 / 3 for i in range(MAX_SAMPLES + 150)]
    with JournalWriter(run.layout.samples("host")) as host:
        for i, cpu in enumerate(cpus):
            memory = None if i >= len(cpus) - 3 else 1000 + i
            host.write(HostSample(t=run.t + i, cpu_pct=cpu, mem_used_bytes=memory))
    state = SharedRunWatcher(tmp_path).poll()
    assert len(state.nodes["a"].samples.host) == SHARED_MAX_SAMPLES
    (summary,) = assess(state, {}, TREE, context=CONTEXT).nodes
    newest = [c for c in cpus[-MAX_SAMPLES:] if c is not None]
    assert summary.cpu_mean_pct == sum(newest) / len(newest)
    # The newest three samples measured no memory: the summary keeps the last one measured.
    assert summary.mem_used_bytes == 1000 + len(cpus) - 4


def test_the_monitors_final_report_redoes_every_rank_a_tick_left_stale(tmp_path: Path) -> None:
    pids = list(range(100, 100 + RANKS_REFRESHED_PER_TICK + 8))
    run = ranks_run(tmp_path / "run", pids)
    write_steps(run, pids, 0, 20)
    monitor = LiveMonitor(run.layout.root, TREE, clock=lambda: 0.0)
    monitor.tick()
    write_steps(run, pids, 20, 5)
    ticked = monitor.tick()
    counts = [r.analysis.metrics["steps_count"] for r in ticked.report.ranks]
    assert set(counts) == {18, 23}  # 8 ranks wait for the next tick
    final = monitor.finish()
    assert json_of(final) == json_of(assess(load_run(run.layout.root), {}, TREE, context=CONTEXT))
    assert [r.analysis.metrics["steps_count"] for r in final.ranks] == [23] * len(pids)


def test_a_shared_run_keeps_at_least_what_its_readers_read() -> None:
    # The straggler judgement reads every step's block sums (`runs.step_blocks`), kept whole.
    assert SHARED_MAX_STEPS >= RECENT_STEPS + WARMUP_STEPS
    assert max(SAMPLES_KEPT, HOST_SAMPLES_READ) <= SHARED_MAX_SAMPLES
