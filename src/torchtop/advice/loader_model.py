"""How many DataLoader workers pay on this machine, and the gain they are predicted to give net
of the cores they take from the math.

The step `S` (1 here) is compute `C` plus the wait on the loader `D` (`loader_wait_share`, the
agent's timing of the recent steps, else `dataloader_share`). A share `c` of the loading's
time is CPU work (`loader_cpu_share`, measured: the stepping thread's CPU inside `__next__`
with num_workers=0, each worker's busy fraction of a core with workers); the rest waits on
storage or the network. The compute runs `T` intra-op threads on the `F` cores free to this
rank: its share of the node (`rank_cores`) less its part of what other processes measurably
use (`other_cores_used`, 0 where not measured).

More workers hide the wait, but not the CPU work: the core-seconds of loading that ran while
the loop waited (`D * c` in process, `D * c * W0` with `W0` workers) must now run beside the
compute. Idle cores take them first (`(F - T - c * W0) * C` core-seconds a step, where the
compute leaves cores idle); the rest is taken from the compute's OpenMP team, and a team
waits at its barriers for a preempted thread, so each core-second taken costs it a second of
wall time, not `1/F` of one:

    new step = C + max(D * c_busy - idle, 0),   predicted gain = S / new step

Anchors, measured bare on this 2-core machine (docs/benchmarks.md, `benchmarks/loader_fit.py`):
pytorch/examples' ImageNet trainer with `-j 0` (decode ~5% of the step, on the CPU, 2 threads
on 2 cores): 4 workers measured 0.81-1.00x; tests/workloads/cpu_decode.py, its miniature
(`c` 0.99), 0.80-0.88x with 1, 2 or 4 workers. The model says 1.00x: no worker count is
offered. The demo (its Dataset sleeps 5 ms a sample): its loop's own work is ~4% of a 172 ms
step and its loading ~5% CPU, so the new step is 0.04 + 0.96 * 0.05 = 0.088 of it, 15 ms;
with 16 workers it measured 15.6 ms (64 steps/s): the workers' CPU does lengthen the step.

The count: workers enough that each, loading a batch in `L` (`D` with none now, `W0 * S` with
`W0`), delivers one per new step, twice over (`ceil(2 * L / new step)`): the loop takes
batches in order, so one worker's late batch stalls it while the others' wait in the queue.
Under torchtop the demo measured `D` 0.905 and `c` 0.057, a mean need of 6.2 workers; bare, 8
workers ran 43 steps/s, 12-16 the fastest (61-64), 24 slower again (56): the fastest is about
twice the mean need, so 13 are offered. No more of them busy on the CPU at once than the free
cores can run (`W * c <= F`).

Nor more than `WORKERS_PER_CORE` (8) a free core, whatever the loader's CPU share reads: a
worker is a forked process, and without persistent_workers every pass over the data forks
them all again and waits for each one's first batch, so a loader whose CPU share reads ~0
(it sleeps) was offered the knob's maximum, 64 workers, where the wait alone asks for more
than any count hides. Measured bare on this 2-core machine (docs/benchmarks.md):
tests/workloads/starved_options.py at `--sample-sleep-ms 10` (80 ms a batch of 8, 64
batches a pass), 256 steps, 3 alternating rounds: 8 workers 67.6 steps/s, 16 70.0, 32 48.0
(0.62-0.78x of 16), 64 28.7 (0.39-0.41x). The start costs about 33 ms a worker a pass
there (64 workers: a pass of 2.2 s for 80 ms of loading each), so the best count grows
only as the root of a pass's loading over that cost (`sqrt(64 * 80 / 33)`, about 12); the
demo was fastest at 12-16 and slower at 24. 8 a core keeps both at their fastest counts on
2 cores and lets a machine with more cores run more of them in parallel (workers start in
parallel across cores, wake on the cores, and their batches are unpickled by the one loop).

Memory is not bounded here: the process samples give no worker's own resident set, and the
main process's is no estimate of it (a fork shares its parent's pages until written; a
worker's unique pages are its Dataset's touched objects and its batches in flight, often a
small fraction of the parent's), so counting the main RSS a worker would refuse counts a
machine runs easily. `prefetch_factor * W` batches in flight is the part that grows with
`W`; at the bound's 16 workers on 2 cores that is 32 batches.

Where fewer workers hide only part of the wait, the step is at least `L / W`. The count the
model lands on may be at or below the workers the job runs (it ran 64 before this bound): the
caller then offers no change (`advice.values.size_workers`: a fix never lowers the count).
Where the loader's CPU share is not measured (a recorded trace, workers not yet sampled) there
is no model: `None`, and the caller keeps the rule's floor and sizes the workers from the wait
alone.

Limits: `c` is the stepping thread's CPU only (a Dataset whose decode runs torch ops on the
intra-op pool reads lower than it is). On a loaded machine the wait holds run-queue time,
which would read as waiting on storage: `c` is scaled by the job's run-queue wait
(`cpu_demand`), and `other_cores_used` takes the others' cores from `F`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

HIDE_MARGIN = 2.0
"""Workers over the mean need: the in-order loop waits on the latest batch (the demo: a mean
need of 6.2 under torchtop, fastest bare at 12-16)."""
WORKERS_PER_CORE = 8
"""Workers at most a free core: each is a process forked again every pass over the data (no
persistent_workers); starved_options (10 ms a sample) ran 16 workers 70 steps/s on 2 cores,
32 48 and 64 29."""
WORKERS_MAX = 64
"""`dataloader.num_workers`'s maximum in the knob catalogue."""


@dataclass(frozen=True)
class LoaderFit:
    workers: int
    predicted_gain: float
    """The step's speedup with `workers`, net of the cores the loading takes from the math."""


@dataclass(frozen=True)
class Cores:
    free: float
    """Cores free to this rank: its share of the node less its part of other processes' use."""
    compute: float
    """Cores the compute's threads keep busy (its threads, at most the free cores)."""


def free_cores(metrics: Mapping[str, object], rank_cores: int, local_ranks: int) -> Cores:
    """This rank's free cores and its compute's part of them; threads not known fill them."""
    others = _number(metrics.get("other_cores_used")) or 0.0
    free = max(rank_cores - others / max(local_ranks, 1), 0.0)
    threads = _number(metrics.get("torch_num_threads"))
    return Cores(free, free if threads is None else min(threads, free))


def fit_workers(current: int, metrics: Mapping[str, object], cores: Cores) -> LoaderFit | None:
    """The workers to run and the net gain they are predicted to give; None where the wait or
    the loader's CPU share is not measured. The count may be at or below `current`."""
    wait = _number(metrics.get("loader_wait_share"))
    if wait is None:
        wait = _number(metrics.get("dataloader_share"))
    cpu = _number(metrics.get("loader_cpu_share"))
    if wait is None or cpu is None or not 0.0 < wait < 1.0:
        return None
    cpu = cpu_demand(cpu, _number(metrics.get("runqueue_wait_share")))
    compute = 1.0 - wait
    busy_now = cpu * current  # workers' cores already beside the compute
    idle = max(cores.free - cores.compute - busy_now, 0.0) * compute
    moved = wait * cpu * max(current, 1)
    step = compute + max(moved - idle, 0.0)
    load = wait if current == 0 else float(current)
    hide = math.ceil(HIDE_MARGIN * load / step - 1e-9)
    free = max(cores.free, 1.0)
    room = WORKERS_MAX if cpu <= 0.0 else math.floor(free / cpu + 1e-9)
    bound = math.floor(WORKERS_PER_CORE * free + 1e-9)
    workers = max(min(hide, room, bound, WORKERS_MAX), 1)
    step = max(step, load / workers)
    return LoaderFit(workers, round(1.0 / step, 2))


def cpu_demand(cpu_share: float, runqueue_wait_share: float | None) -> float:
    """The loading's CPU share counting its time ready to run as CPU: under other processes'
    load a thread that decodes waits on the run queue between its slices, and that wait reads
    as waiting on storage (`cpu_share` is CPU time over wall time). The job's threads waited
    `w` of the time they were ready to run (`runqueue_wait_share`); a loader as CPU-bound as
    they are waits alike, so its CPU time is `1 - w` of what it needed cores for: `c / (1 - w)`,
    at most 1. A loader that sleeps stays far below 1 (2 busy loops beside the demo, `w` 0.5:
    its 6% reads 12%), one that decodes reads 1 again (cpu_decode's 99% under the same load
    read about 50%)."""
    share = min(max(cpu_share, 0.0), 1.0)
    if runqueue_wait_share is None or not 0.0 < runqueue_wait_share < 1.0:
        return share
    return min(share / (1.0 - runqueue_wait_share), 1.0)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
