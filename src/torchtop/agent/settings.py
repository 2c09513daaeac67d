"""What the agent can learn of the job's settings, for the `settings` record.

Gathered from what the hooks saw (the DataLoader last iterated, whether autocast was entered or
`torch.compile` called, the script's argparse options) and from cheap calls into the job's
torch (thread counts, whether CUDA was initialised). The agent rebuilds this now and then and
writes it only when it differs from what it wrote last.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

from torchtop.runs.node import process_cpus
from torchtop.runs.records import (
    CliOption,
    DdpSettings,
    LoaderSettings,
    Scalar,
    Settings,
    ThreadSettings,
)


@dataclass
class JobFacts:
    """Set by the hooks as they see the job use a feature; read when settings are built."""

    loader: LoaderSettings | None = None
    amp: bool = False
    compiled: bool = False
    # Which signal marks the steps (`step_clock.SIGNAL_NAMES`); None until a step is released.
    step_signal: str | None = None
    # The signal whose steps are held back, waiting for a better one (None when none are).
    step_signal_held: str | None = None
    # The newest `DistributedDataParallel` built, and the user's line that built it.
    ddp: Any = None
    ddp_where: str | None = None


def loader_settings(iterator: Any) -> LoaderSettings:
    """The DataLoader's settings, read from one of its iterators (`_BaseDataLoaderIter`).

    `pin_memory` is what the iterator does (False without an accelerator even when asked for).
    """
    index_sampler = getattr(iterator, "_index_sampler", None)
    auto_collation = getattr(iterator, "_auto_collation", False)
    batch_size = getattr(index_sampler, "batch_size", None) if auto_collation else None
    return LoaderSettings(
        num_workers=getattr(iterator, "_num_workers", None),
        pin_memory=getattr(iterator, "_pin_memory", None),
        batch_size=batch_size,
        persistent_workers=getattr(iterator, "_persistent_workers", None),
        prefetch_factor=getattr(iterator, "_prefetch_factor", None),
    )


def thread_settings() -> ThreadSettings:
    return ThreadSettings(
        torch_num_threads=torch.get_num_threads(),
        torch_interop_threads=torch.get_num_interop_threads(),
        omp_num_threads_env=os.environ.get("OMP_NUM_THREADS"),
        openmp_runtime=openmp_runtime(),
        usable_cores=usable_cores(),
        omp_proc_bind_env=os.environ.get("OMP_PROC_BIND"),
    )


_OPENMP_LIBRARIES = (("libiomp5", "intel"), ("libgomp", "gnu"), ("libomp", "llvm"))
"""Library stem and runtime; Intel's first, since a job may preload it over a loaded libgomp."""


@functools.cache
def openmp_runtime() -> str | None:
    """`gnu`, `intel` or `llvm`: the OpenMP runtime mapped into this process (torch loads it at
    import), read once from /proc/self/maps; None where that cannot be read or none is loaded.

    `torch.__config__.parallel_info()` names only the OpenMP version, not whose runtime it is,
    and the runtime decides which variables mean anything (libgomp ignores `KMP_*`)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return runtime_in_maps(maps)
    except OSError:
        return None


def runtime_in_maps(lines: Iterable[str]) -> str | None:
    """The OpenMP runtime among the mapped files of a /proc/PID/maps listing."""
    names = {os.path.basename(line.split()[-1]) for line in lines if ".so" in line}
    for stem, runtime in _OPENMP_LIBRARIES:
        if any(name.startswith(stem + ".so") or name.startswith(stem + "-") for name in names):
            return runtime
    return None


_start_cpus: frozenset[int] | None = None


def remember_start_cpus(cpus: frozenset[int] | set[int] | None) -> None:
    """The affinity the bootstrap read at interpreter start, before torch loaded OpenMP."""
    global _start_cpus
    _start_cpus = frozenset(cpus) if cpus else None


def usable_cores() -> int | None:
    """The cores this process may run on, which a container, `taskset` or the launcher makes
    fewer than the machine's: its affinity as it was started (`remember_start_cpus`), else the
    union of its threads' affinities. Never the main thread's affinity now: with
    `OMP_PROC_BIND` set, OpenMP pins it to one core as torch loads."""
    if _start_cpus:
        return len(_start_cpus)
    cpus = process_cpus(os.getpid())
    return len(cpus) if cpus else os.cpu_count()


def ddp_settings(module: Any, where: str | None) -> DdpSettings:
    """A `DistributedDataParallel`'s gradient bytes, bucket cap and bucket count, from its
    logging data (`_get_ddp_logging_data`: what DDP itself reports)."""
    data = module._get_ddp_logging_data()
    # `num_buckets_reduced` counts the buckets of the last backward; with several ranks they
    # are rebuilt in gradient order after the first (`bucket_sizes` keeps the constructor's).
    settled = bool(data.get("has_rebuilt_buckets")) or data.get("world_size") == 1
    return DdpSettings(
        gradient_bytes=_int(data.get("total_parameter_size_bytes")),
        bucket_cap_bytes=_int(data.get("bucket_cap_bytes")),
        bucket_count=_int(data.get("num_buckets_reduced")) if settled else None,
        where=where,
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def cuda_initialized() -> bool:
    """Whether the job has initialised CUDA (asking does not initialise it)."""
    is_initialized: Callable[[], bool] = torch.cuda.is_initialized
    return is_initialized()


def device_in_use() -> str:
    """`cuda:<current device>` once the job has initialised CUDA, else `cpu`.

    Never initialises CUDA itself: that would cost the job time and GPU memory.
    """
    if cuda_initialized():
        return f"cuda:{torch.cuda.current_device()}"
    return "cpu"


def settings_record(
    facts: JobFacts, cli_options: list[dict[str, Any]], overrides: dict[str, Scalar]
) -> Settings:
    """The `settings` record without its time, so two of them compare equal when unchanged."""
    return Settings(
        dataloader=facts.loader,
        threads=thread_settings(),
        device=device_in_use(),
        amp=facts.amp,
        compiled=facts.compiled,
        cli_options=[CliOption(**option) for option in cli_options],
        overrides=overrides,
        step_signal=facts.step_signal,
        step_signal_held=facts.step_signal_held,
        ddp=ddp_settings(facts.ddp, facts.ddp_where) if facts.ddp is not None else None,
    )
