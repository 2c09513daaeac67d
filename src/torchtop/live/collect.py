"""Start the launcher-side collectors (host, GPU, stacks) for a job; stop them together.

Each runs on its own sampler thread and writes its own journal in the run folder. Stacks are
dumped every few seconds when the job has an agent (they only feed the hot-stacks panel) and
every second for `attach`, where they are the main evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torchtop.collectors.host import HostCollector
from torchtop.collectors.nvml import NvmlCollector
from torchtop.collectors.sampler import Sampler
from torchtop.collectors.stacks import StackCollector
from torchtop.collectors.tree import job_pids
from torchtop.runs.journal import JournalWriter
from torchtop.runs.layout import RunLayout

HOST_INTERVAL_S = 1.0
GPU_INTERVAL_S = 1.0
STACKS_INTERVAL_WITH_AGENT_S = 5.0
STACKS_INTERVAL_ATTACHED_S = 1.0


@dataclass
class Collectors:
    samplers: list[Sampler] = field(default_factory=list)
    writers: list[JournalWriter] = field(default_factory=list)
    nvml: NvmlCollector | None = None

    def stop(self) -> None:
        for sampler in self.samplers:
            sampler.stop()
        if self.nvml is not None:
            self.nvml.stop()
        for writer in self.writers:
            writer.close()


def start_collectors(layout: RunLayout, root_pid: int, with_agent: bool) -> Collectors:
    layout.create()
    collectors = Collectors(nvml=NvmlCollector())
    nvml = collectors.nvml
    assert nvml is not None
    stacks_every = STACKS_INTERVAL_WITH_AGENT_S if with_agent else STACKS_INTERVAL_ATTACHED_S
    plan = [
        ("host", HOST_INTERVAL_S, HostCollector(root_pid).sample),
        ("gpu", GPU_INTERVAL_S, lambda: nvml.sample(job_pids(root_pid))),
        ("stacks", stacks_every, StackCollector(root_pid).sample),
    ]
    for name, interval_s, sample in plan:
        writer = JournalWriter(layout.samples(name))
        collectors.writers.append(writer)
        collectors.samplers.append(Sampler(name, interval_s, sample, writer).start())
    return collectors
