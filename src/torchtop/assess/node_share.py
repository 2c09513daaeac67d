"""What a job's processes share on a node: how many ranks run there, and what DDP reduces.

Thread and affinity advice is about one node's cores, which every rank on it divides among its
own thread pools: the count of local ranks comes from the launcher's `LOCAL_WORLD_SIZE` (in the
agent's `hello`), else from the training processes the run folder holds for the main process's
node. A bucket-size fix can act only where it changes how many buckets DDP fills; DDP's
bucket count is its own (`num_buckets_reduced` once rebuilt), else estimated the way DDP fills
buckets (the first holds 1 MiB under the default cap, every other one up to the cap: 50 MB of
gradients made 3 buckets in torch 2.13 as DDP counted them, 2 at 25 MiB given, 1 at 100).
"""

from __future__ import annotations

import dataclasses
import math

import msgspec

from torchtop.advice.machine import Machine, rank_share
from torchtop.assess.context import Context
from torchtop.model.analysis import Metrics
from torchtop.runs.records import DdpSettings
from torchtop.runs.state import RunState

FIRST_BUCKET_BYTES = 1024 * 1024
"""`torch.distributed._DEFAULT_FIRST_BUCKET_BYTES`: the first bucket under the default cap."""
DEFAULT_BUCKET_CAP_BYTES = 25 * 1024 * 1024


def local_ranks(state: RunState) -> int | None:
    """The job's ranks on the main process's node; None before any process said hello."""
    processes = state.training_processes
    if not processes:
        return None
    main = processes[0]
    told = main.hello.local_world_size if main.hello is not None else None
    if told:
        return told
    return sum(1 for p in processes if p.node == main.node) or None


def node_machine(state: RunState, machine: Machine) -> Machine:
    """`machine` (the one assessing), with the job's ranks on it."""
    return dataclasses.replace(machine, local_ranks=local_ranks(state) or 1)


def node_metrics(state: RunState, metrics: Metrics, context: Context) -> Metrics:
    """The job's ranks on the main process's node, and one rank's share of its cores (as the
    fixes' values count it: `advice.machine.rank_share`) on the node the run was recorded on: a
    folder recorded elsewhere counts that machine's cores (`run.json`'s `cpu_count`)."""
    cores = metrics.get("host_cpu_count")
    # A mean over the ranks (a float) where there are several.
    allowed = int(cores) if isinstance(cores, int | float) and not isinstance(cores, bool) else None
    if allowed is None:
        return {"local_ranks": local_ranks(state), "rank_cores": None}
    here = context.machine
    if state.launch.host != context.hostname:
        # Recorded elsewhere (or not said where): that machine's cores, not this one's.
        node_cores = max(state.launch.cpu_count or allowed, allowed)
        here = Machine(node_cores, node_cores)
    node = dataclasses.replace(here, local_ranks=local_ranks(state) or 1)
    return {"local_ranks": local_ranks(state), "rank_cores": rank_share(node, allowed).cores}


def ddp_metrics(ddp: DdpSettings | msgspec.UnsetType | None) -> Metrics:
    """`ddp_gradient_bytes`, `ddp_bucket_cap_bytes` and `ddp_bucket_count` where the agent saw
    the job build its `DistributedDataParallel`; nothing where it did not."""
    if not isinstance(ddp, DdpSettings) or ddp.gradient_bytes is None:
        return {}
    cap = ddp.bucket_cap_bytes or DEFAULT_BUCKET_CAP_BYTES
    count = ddp.bucket_count or expected_buckets(ddp.gradient_bytes, cap)
    return {
        "ddp_gradient_bytes": ddp.gradient_bytes,
        "ddp_bucket_cap_bytes": cap,
        "ddp_bucket_count": count,
    }


def expected_buckets(gradient_bytes: int, cap_bytes: int) -> int:
    """DDP's bucket count for this many gradient bytes (tensors are never split, so a real
    layout can hold a few more): the default cap starts with a 1 MiB bucket."""
    if gradient_bytes <= 0:
        return 1
    first = FIRST_BUCKET_BYTES if cap_bytes == DEFAULT_BUCKET_CAP_BYTES else cap_bytes
    if gradient_bytes <= first:
        return 1
    return 1 + math.ceil((gradient_bytes - first) / cap_bytes)
