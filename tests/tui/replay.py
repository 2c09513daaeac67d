"""Replayed runs for the dashboard: run folders written record by record with the real writers,
watched by the real `LiveMonitor` on a simulated clock.

`SyntheticRun` writes what an agent and the launcher's collectors write (docs/run-folder.md):
steps, settings with the script's argparse options, profiler windows (real traces from
sample_traces/), and host, GPU and py-spy samples. `Replay` hands the run's simulated time to a
`LiveMonitor` as its clock: time passes only when the run writes the next stretch of it
(`elapse`), so each tick of the production monitor reads the records of exactly that stretch,
and elapsed times and `for_s` are simulated, never read from the machine. The benchmark uses
the same writer at ten times real speed.
"""

from __future__ import annotations

import functools
import math
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import msgspec

from torchtop.assess.context import Context
from torchtop.assess.snapshot import Snapshot
from torchtop.diagnosis.rules import RuleTree, load_rules
from torchtop.live.watch import LiveMonitor
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import (
    CliOption,
    GpuDevice,
    GpuProcess,
    GpuSample,
    Hello,
    HostProcess,
    HostSample,
    LoaderSettings,
    RunRecord,
    Settings,
    StackFrame,
    StackProcess,
    StacksSample,
    StackThread,
    Step,
    ThreadSettings,
    Unavailable,
    Window,
)

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
MATMUL_WINDOW = Path(__file__).resolve().parent / "data" / "matmul"
START_T = 1_700_000_000.0
SITE = "/usr/lib/python3.11/site-packages"
RSS_BYTES = 1_250_000_000


@functools.cache
def rules() -> RuleTree:
    return load_rules()


@dataclass(frozen=True)
class Rank:
    pid: int
    rank: int | None
    window: Path | None = None
    """A real profiler trace this process 'captures' once `window_after_s` have passed."""


@dataclass(frozen=True)
class Scenario:
    kind: str
    command: tuple[str, ...]
    ranks: tuple[Rank, ...]
    step_s: float
    data_wait_s: float
    settings: Settings
    workers: int = 0
    gpus: int = 0
    gpu_reason: str = "NVML: no NVIDIA driver found (libnvidia-ml.so.1 is missing)"
    stacks: tuple[tuple[StackFrame, ...], ...] = ()
    """Stacks of the main thread, innermost frame first; the dumps cycle through them."""
    window_after_s: float = 4.0
    cpu_count: int = 2
    leak_bytes: int = 0
    """Kept every step: the resident set the steps report grows by this much each."""
    stall_every: int = 0
    """Every `stall_every`th step takes `stall_s` more (a checkpoint on a schedule); 0: none."""
    stall_s: float = 0.0


def frame(function: str, file: str, line: int) -> StackFrame:
    return StackFrame(function=function, file=file, line=line)


LOADER_STACKS = (
    (
        frame("__getitem__", "/home/ada/train.py", 34),
        frame("fetch", f"{SITE}/torch/utils/data/_utils/fetch.py", 52),
        frame("__next__", f"{SITE}/torch/utils/data/dataloader.py", 733),
        frame("main", "/home/ada/train.py", 71),
        frame("<module>", "/home/ada/train.py", 90),
    ),
    (
        frame("__getitem__", "/home/ada/train.py", 35),
        frame("fetch", f"{SITE}/torch/utils/data/_utils/fetch.py", 52),
        frame("main", "/home/ada/train.py", 71),
        frame("<module>", "/home/ada/train.py", 90),
    ),
    (
        frame("forward", f"{SITE}/torch/nn/modules/linear.py", 125),
        frame("forward", "/home/ada/model.py", 18),
        frame("main", "/home/ada/train.py", 75),
        frame("<module>", "/home/ada/train.py", 90),
    ),
)
DDP_STACKS = (
    (
        frame("wait", f"{SITE}/torch/distributed/distributed_c10d.py", 2501),
        frame("_sync_buckets", f"{SITE}/torch/nn/parallel/distributed.py", 1402),
        frame("train_step", "/home/ada/train_ddp.py", 58),
        frame("<module>", "/home/ada/train_ddp.py", 97),
    ),
    (
        frame("backward", f"{SITE}/torch/autograd/__init__.py", 266),
        frame("train_step", "/home/ada/train_ddp.py", 56),
        frame("<module>", "/home/ada/train_ddp.py", 97),
    ),
)


def cli_option(flag: str, kind: str, value: object) -> CliOption:
    dest = flag.lstrip("-").replace("-", "_")
    return CliOption(flags=[flag], dest=dest, type=kind, default=value, value=value)


def dataloader_bound() -> Scenario:
    """The demo's shape: one process, num_workers=0, 80% of each step waiting on data."""
    return Scenario(
        kind="demo",
        command=("python", "train.py", "--batch-size", "32", "--num-workers", "0"),
        ranks=(Rank(4242, None, SAMPLES / "dataloader_starved"),),
        step_s=0.125,
        data_wait_s=0.1,
        settings=settings(32, 0, options=True),
        stacks=LOADER_STACKS,
    )


def leaky_with_checkpoints() -> Scenario:
    """The demo's shape with the long run's faults planted: 1 MiB kept a step, and a 1.5 s
    checkpoint every 40th step."""
    return replace(dataloader_bound(), leak_bytes=2**20, stall_every=40, stall_s=1.5)


def communication_bound() -> Scenario:
    """Two gloo ranks on two (fake) GPUs, most of each step in all-reduce."""
    return Scenario(
        kind="run",
        command=("torchrun", "--nproc-per-node", "2", "train_ddp.py", "--batch-size", "64"),
        ranks=(
            Rank(5001, 0, SAMPLES / "ddp_gloo" / "rank0"),
            Rank(5002, 1, SAMPLES / "ddp_gloo" / "rank1"),
        ),
        step_s=0.4,
        data_wait_s=0.004,
        settings=settings(64, 2, options=False),
        workers=2,
        gpus=2,
        stacks=DDP_STACKS,
        cpu_count=8,
    )


def known_matmuls() -> Scenario:
    """`workloads/matmul_job.py` under `run`: 6 fixed-size matmuls a step, no DataLoader, its
    window a real one of that job with shapes (`data/make_matmul_window.py`)."""
    return Scenario(
        kind="run",
        command=("python", "matmul_job.py"),
        ranks=(Rank(6006, None, MATMUL_WINDOW),),
        step_s=0.011,
        data_wait_s=0.0,
        settings=msgspec.structs.replace(settings(1, 0, options=False), dataloader=None),
    )


def settings(batch: int, workers: int, options: bool) -> Settings:
    chosen = [cli_option("--batch-size", "int", batch), cli_option("--num-workers", "int", workers)]
    return Settings(
        t=START_T,
        dataloader=LoaderSettings(num_workers=workers, pin_memory=False, batch_size=batch,
                                  persistent_workers=False, prefetch_factor=None),
        threads=ThreadSettings(torch_num_threads=2, torch_interop_threads=2,
                               omp_num_threads_env=None),
        device="cpu",
        amp=None,
        compiled=False,
        cli_options=[*chosen, cli_option("--pin-memory", "bool", False)] if options else [],
        overrides={},
    )  # fmt: skip


def trace_file(prefix: Path) -> Path:
    """`sample_traces/ddp_gloo/rank0` names the file that starts with rank0 in that folder."""
    folder, stem = (prefix, "") if prefix.is_dir() else (prefix.parent, prefix.name)
    return next(p for p in sorted(folder.glob(f"{stem}*.json.gz")))


@dataclass
class SyntheticRun:
    """Writes a scenario's run folder as simulated time passes."""

    root: Path
    scenario: Scenario
    now_s: float = 0.0
    steps: int = 0
    windows_written: bool = False
    writers: dict[str, JournalWriter] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.layout = RunLayout(self.root)
        self.layout.create()
        s = self.scenario
        write_record(self.layout.run_json, RunRecord(
            kind=s.kind, command=list(s.command), pid=s.ranks[0].pid, cpu_count=s.cpu_count,
            started_at=START_T,
        ))  # fmt: skip
        for rank in s.ranks:
            self.agent(rank.pid).write(Hello(
                t=START_T, pid=rank.pid, ppid=1, rank=rank.rank,
                world_size=len(s.ranks) if rank.rank is not None else None,
            ))  # fmt: skip
            self.agent(rank.pid).write(s.settings)
        if not s.gpus:
            self.samples("gpu").write(Unavailable(t=START_T, reason=s.gpu_reason))

    def agent(self, pid: int) -> JournalWriter:
        return self._writer(str(pid), self.layout.agent_events(pid))

    def samples(self, source: str) -> JournalWriter:
        return self._writer(source, self.layout.samples(source))

    def _writer(self, key: str, path: Path) -> JournalWriter:
        if key not in self.writers:
            self.writers[key] = JournalWriter(path)
        return self.writers[key]

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()

    def advance(self, seconds: float) -> None:
        """Write every record of the next `seconds` of simulated time."""
        end_s = self.now_s + seconds
        for second in range(math.floor(self.now_s) + 1, math.floor(end_s) + 1):
            self.write_samples(second)
        s = self.scenario
        while self.step_end_s(self.steps) <= end_s:
            self.write_steps(self.steps)
            self.steps += 1
        self.now_s = end_s
        if not self.windows_written and end_s >= s.window_after_s:
            self.write_windows()

    def stalled(self, step: int) -> bool:
        every = self.scenario.stall_every
        return every > 0 and step % every == every - 1

    def step_end_s(self, step: int) -> float:
        """When step `step` ends: its steps and the stalls up to it."""
        s = self.scenario
        stalls = (step + 1) // s.stall_every if s.stall_every else 0
        return (step + 1) * s.step_s + stalls * s.stall_s

    def write_steps(self, step: int) -> None:
        s = self.scenario
        for rank in s.ranks:
            jitter = 1.0 + 0.04 * math.sin(step * 0.7 + rank.pid)
            wall_s = s.step_s * jitter + (s.stall_s if self.stalled(step) else 0.0)
            record = Step(
                t=START_T + self.step_end_s(step), step=step,
                wall_s=wall_s, data_wait_s=s.data_wait_s * jitter,
            )  # fmt: skip
            if s.leak_bytes:
                record.rss_bytes = RSS_BYTES + s.leak_bytes * step
            self.agent(rank.pid).write(record)

    def write_windows(self) -> None:
        self.windows_written = True
        for rank in self.scenario.ranks:
            if rank.window is None:
                continue
            source = trace_file(rank.window)
            target = self.layout.traces_dir / source.name
            shutil.copyfile(source, target)
            self.agent(rank.pid).write(Window(
                t=START_T + self.now_s, path=f"traces/{source.name}",
                first_step=max(self.steps - 4, 0), last_step=self.steps,
            ))  # fmt: skip

    def write_samples(self, second: int) -> None:
        t = START_T + second
        self.samples("host").write(host_record(self.scenario, second, t))
        if self.scenario.gpus:
            self.samples("gpu").write(gpu_record(self.scenario, second, t))
        if self.scenario.stacks and second % 2 == 0:
            self.samples("stacks").write(stacks_record(self.scenario, second, t))


def wave(second: int, low: float, high: float, period: float = 9.0) -> float:
    return round(low + (high - low) * (0.5 + 0.5 * math.sin(second * 2 * math.pi / period)), 1)


def host_record(s: Scenario, second: int, t: float) -> HostSample:
    processes = [
        HostProcess(pid=r.pid, ppid=1, name="python", role="main",
                    cpu_pct=wave(second + r.pid, 80, 99), rss_bytes=RSS_BYTES, threads=12,
                    read_bytes_per_s=0.0, write_bytes_per_s=0.0)
        for r in s.ranks
    ]  # fmt: skip
    processes += [
        HostProcess(pid=s.ranks[0].pid + 100 + w, ppid=s.ranks[0].pid, name="python",
                    role="worker", cpu_pct=wave(second + w, 20, 45), rss_bytes=410_000_000,
                    threads=3, read_bytes_per_s=2e6, write_bytes_per_s=0.0)
        for w in range(s.workers)
    ]  # fmt: skip
    cores: list[float | int | None] = [
        wave(second + 3 * c, 15, 98, period=7.0) for c in range(s.cpu_count)
    ]
    return HostSample(
        t=t, cpu_pct=round(sum(c or 0 for c in cores) / len(cores), 1),
        per_cpu_pct=cores, iowait_pct=wave(second, 0, 4), mem_used_bytes=6.1e9,
        mem_total_bytes=16e9, disk_read_bytes_per_s=wave(second, 1e6, 4e7),
        disk_write_bytes_per_s=2.5e5, net_recv_bytes_per_s=wave(second, 1e4, 3e5),
        net_sent_bytes_per_s=8e3, processes=processes,
    )  # fmt: skip


def gpu_record(s: Scenario, second: int, t: float) -> GpuSample:
    devices = [
        GpuDevice(index=i, name="NVIDIA A100-SXM4-40GB", uuid=f"GPU-fake-{i}",
                  utilization_gpu_pct=wave(second + 4 * i, 20, 45), utilization_memory_pct=12.0,
                  sm_clock_mhz=1410.0, mem_clock_mhz=1215.0, memory_used_bytes=9.8e9 + 1e8 * i,
                  memory_total_bytes=42.9e9, power_w=wave(second, 90, 140), power_limit_w=400.0,
                  temperature_c=41.0, pcie_tx_bytes_per_s=wave(second, 1e8, 6e8),
                  pcie_rx_bytes_per_s=wave(second + 2, 2e8, 1.2e9), throttle_reasons=[])
        for i in range(s.gpus)
    ]  # fmt: skip
    processes = [
        GpuProcess(pid=r.pid, device_index=i, memory_used_bytes=9.1e9, sm_util_pct=30.0)
        for i, r in enumerate(s.ranks)
    ]
    return GpuSample(t=t, devices=devices, processes=processes)


def stacks_record(s: Scenario, second: int, t: float) -> StacksSample:
    stack = s.stacks[(second // 2) % len(s.stacks)]
    processes = [
        StackProcess(pid=r.pid, role="main", threads=[
            StackThread(tid=r.pid, name="MainThread", active=True, frames=list(stack)),
            StackThread(tid=r.pid + 1, name="pin_memory", active=False,
                        frames=[frame("wait", "/usr/lib/python3.11/threading.py", 324)]),
        ])
        for r in s.ranks
    ]  # fmt: skip
    return StacksSample(t=t, processes=processes)


class Replay:
    """A synthetic run watched by the real `LiveMonitor`, whose clock is the run's own time.

    With `ticks`, the monitor is asked to watch for that many ticks' worth of simulated time
    (`for_s`), as `torchtop run --for` asks, and its tick says when that has passed."""

    def __init__(
        self,
        run: SyntheticRun,
        tick_s: float = 1.0,
        ticks: int | None = None,
        context: Context | None = None,
    ) -> None:
        self.run = run
        self.tick_s = tick_s
        for_s = None if ticks is None else ticks * tick_s
        self.monitor = LiveMonitor(
            run.root, rules(), for_s=for_s, kind=run.scenario.kind, clock=self.clock,
            context=context,
        )  # fmt: skip

    def clock(self) -> float:
        return self.run.now_s

    def elapse(self) -> None:
        """One interval passes: the run writes its next `tick_s` seconds of records."""
        self.run.advance(self.tick_s)

    def tick(self) -> Snapshot:
        """One interval, then the monitor's tick, as the live loop ticks after its sleep."""
        self.elapse()
        return self.monitor.tick()
