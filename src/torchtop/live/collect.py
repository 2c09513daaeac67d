"""Start the launcher-side collectors (host, GPU, stacks) for a job; stop them together.

Each runs on its own sampler thread and writes its own journal in the run folder. Stacks are
dumped every few seconds when the job has an agent (they only feed the hot-stacks panel) and
every second for `attach`, where they are the main evidence; with an agent, a rank that falls
silent (its journal stops while a peer's grows) is dumped at once, where it hangs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from torchtop.collectors.host import HostCollector
from torchtop.collectors.nvml import NvmlCollector
from torchtop.collectors.pace import BUDGET_SHARE
from torchtop.collectors.rank_watch import INTERVAL_S as RANKS_INTERVAL_S
from torchtop.collectors.rank_watch import RankWatch
from torchtop.collectors.sampler import SampleFn, Sampler
from torchtop.collectors.silence import SilenceWatch, StacksSchedule
from torchtop.collectors.stacks import StackCollector
from torchtop.collectors.tree import job_pids
from torchtop.model.attach import AttachTarget
from torchtop.runs.identity import NODES_FOLDER, node_folders
from torchtop.runs.journal import JournalWriter
from torchtop.runs.layout import RunLayout

HOST_INTERVAL_S = 1.0
GPU_INTERVAL_S = 1.0
STACKS_INTERVAL_WITH_AGENT_S = 5.0
STACKS_INTERVAL_ATTACHED_S = 1.0
"""Also the tick of the silence watch, with an agent: a rank that fell silent is dumped at the
next tick (`collectors.silence`)."""
SILENT_AFTER_S = 5.0
"""The rank policy's default (`rules/_verdict.toml`, `[ranks] silent_after_s`): the launcher
dumps a rank as the report would start calling it silent."""


@dataclass
class Collectors:
    samplers: list[Sampler] = field(default_factory=list)
    writers: list[JournalWriter] = field(default_factory=list)
    nvml: NvmlCollector | None = None
    stacks: StackCollector | None = None

    def stop(self) -> None:
        for sampler in self.samplers:
            sampler.stop()
        if self.stacks is not None:
            self.stacks.close()  # a native chunk in flight would go on sampling the job
        if self.nvml is not None:
            self.nvml.stop()
        for writer in self.writers:
            writer.close()


def start_collectors(
    layout: RunLayout, root_pid: int, with_agent: bool, budget_share: float = BUDGET_SHARE
) -> Collectors:
    layout.create()
    collectors = Collectors(nvml=NvmlCollector())
    nvml = collectors.nvml
    assert nvml is not None
    # Without an agent the stacks are the evidence: native frames say what libtorch does.
    collectors.stacks = StackCollector(root_pid, native=not with_agent, budget_share=budget_share)
    stacks: SampleFn = collectors.stacks.sample
    if with_agent:
        silence = SilenceWatch(layout.events_dir, SILENT_AFTER_S, lambda: _peer_events(layout))
        stacks = StacksSchedule(StackCollector(root_pid), silence, STACKS_INTERVAL_WITH_AGENT_S)
    plan = [
        ("host", HOST_INTERVAL_S, HostCollector(root_pid, str(_run_root(layout))).sample),
        ("gpu", GPU_INTERVAL_S, lambda: nvml.sample(job_pids(root_pid))),
        ("stacks", STACKS_INTERVAL_ATTACHED_S, stacks),
    ]
    for name, interval_s, sample in plan:
        writer = JournalWriter(layout.samples(name))
        collectors.writers.append(writer)
        collectors.samplers.append(Sampler(name, interval_s, sample, writer).start())
    return collectors


def follow_ranks(collectors: Collectors, layout: RunLayout, target: AttachTarget) -> None:
    """`attach` to a job of several ranks: its ranks read again every few seconds, a record in
    samples/ranks.jsonl when one restarts under a new pid or a new one joins."""
    writer = JournalWriter(layout.samples("ranks"))
    collectors.writers.append(writer)
    sampler = Sampler("ranks", RANKS_INTERVAL_S, RankWatch(target).sample, writer)
    collectors.samplers.append(sampler.start())


def _run_root(layout: RunLayout) -> Path:
    """The run folder a node's folder belongs to: its processes, another node's launcher and
    ranks on this machine included, are none of them other tenants of the machine."""
    if layout.root.parent.name == NODES_FOLDER:
        return layout.root.parent.parent
    return layout.root


def _peer_events(layout: RunLayout) -> list[Path]:
    """The other nodes' events folders, where this launcher writes a node of a shared run."""
    if layout.root.parent.name != NODES_FOLDER:
        return []
    return [RunLayout(folder).events_dir for folder in node_folders(layout.root.parent.parent)]
