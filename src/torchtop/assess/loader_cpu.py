"""How much of the DataLoader's work is CPU work: `loader_cpu_share`, what worker counts follow.

A loader that mostly waits on storage or the network costs little CPU, so more workers than
cores can pay; one that decodes on the CPU takes its cores from the math (`advice/loader_model`).
With `num_workers=0` the agent times the stepping thread's CPU inside `DataLoader.__next__`
(`data_cpu_s`), and its share of the wait is the answer (`assess.run.in_process_cpu_share`).
With workers the wait is the main process blocked on their queue, so that share says nothing;
while the loop waits on them their queue is empty and each worker loads without pause, so the
fraction of its time each worker spends on the CPU (the launcher's process samples, role
`worker`, 100% a core) is the same figure. Pure: the samples come in the run's state.
"""

from __future__ import annotations

from collections.abc import Iterable

from torchtop.model.analysis import Metrics
from torchtop.runs.records import HostSample
from torchtop.runs.state import RunState

WORKER_SAMPLES = 10
"""The newest host samples read (about 10 s at the launcher's pace): the recent steps'."""


def loader_cpu_metrics(state: RunState, metrics: Metrics) -> Metrics:
    """`loader_cpu_share` from the workers' measured CPU where the job has workers (None where
    none was sampled); nothing (the in-process figure stands) where it has none."""
    workers = metrics.get("loader_workers")
    if not isinstance(workers, int | float) or workers <= 0:
        return {}
    newest = list(state.samples.host)[-WORKER_SAMPLES:]
    return {"loader_cpu_share": worker_busy_share(newest)}


def worker_busy_share(samples: Iterable[HostSample]) -> float | None:
    """The mean fraction of one core each DataLoader worker used, over the samples that saw
    workers with a CPU reading; None where none did."""
    per_sample = []
    for sample in samples:
        used = [p.cpu_pct for p in sample.processes if p.role == "worker" and p.cpu_pct is not None]
        if used:
            per_sample.append(sum(float(u) for u in used) / 100.0 / len(used))
    if not per_sample:
        return None
    return round(min(sum(per_sample) / len(per_sample), 1.0), 4)
