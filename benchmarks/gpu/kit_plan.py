"""What the kit runs, in order of value, and what each planted job's truth is.

The order puts the checks that tell most first, so a run cut short by its deadline still
answers them: the float32 job under `run` (verdict, NVML against nvidia-smi, kernel share,
steps/s), the other planted jobs, the agent's cost, `tune --allow precision`, `attach`, the
dashboard, and `torch.compile` last (its compile time is the least predictable).

The efficiency steps (a GEMM of known size, a small GPT) are a group of their own, run with
`--only efficiency` in a budget of their own, so the default kit keeps its eight minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

CPU_ARGS = ("--device", "cpu", "--scale", "0.05", "--every", "2")


@dataclass(frozen=True)
class PlantedJob:
    name: str
    script: str
    """A file of benchmarks/gpu/jobs."""
    bottleneck: str | None
    """The class `run` must name (None: any; the planted rule is the truth)."""
    rule: str | None
    """The rule `run` must report (None: none is planted)."""
    fix_knobs: tuple[str, ...] = ()
    """Knobs the planted rule's finding must offer (on a GPU of compute capability >= 8)."""
    kernel_truth: bool = False
    """The job's CUDA events span only saturated GPU work, so their time is its kernel time."""
    args: tuple[str, ...] = ()
    gap: str | None = None
    """A gap known before any GPU run, named beside the verdict when it fails."""
    efficiency: str | None = None
    """The efficiency truth the job prints (`KIT-GEMM` or `KIT-GPT`): "gemm", "gpt" or None."""


MEMORY_GAP = (
    "known gap: under run the agent's windows do not profile memory and nothing turns NVML's "
    "memory.used or the allocator's peak into memory_peak_share, so this rule cannot fire live"
)

JOBS = {
    job.name: job
    for job in (
        PlantedJob(
            "fp32-matmul", "fp32_matmul.py", "gpu", "tensor-cores-unused",
            ("amp.dtype", "torch.float32_matmul_precision"), kernel_truth=True,
        ),
        PlantedJob(
            "pageable-copies", "pageable_copies.py", "memcpy", "pageable-host-copies",
            ("dataloader.pin_memory",),
        ),
        PlantedJob(
            "input-bound", "input_bound.py", "dataloader", "dataloader-single-process",
            ("dataloader.num_workers",),
        ),
        PlantedJob("launch-bound", "launch_bound.py", "cpu", "launch-bound"),
        PlantedJob("item-sync", "item_sync.py", "cpu", "sync-in-loop", kernel_truth=True),
        PlantedJob("memory-full", "memory_full.py", None, "memory-near-capacity", gap=MEMORY_GAP),
        PlantedJob("fp32-compile", "fp32_matmul.py", "gpu", "tensor-cores-unused",
                   args=("--compile",)),
        PlantedJob("gemm", "gemm.py", "gpu", None, efficiency="gemm"),
        PlantedJob("small-gpt", "small_gpt.py", None, None, efficiency="gpt"),
    )
}  # fmt: skip


@dataclass(frozen=True)
class Step:
    kind: str
    """run, bare, tune, attach, dashboard."""
    job: str
    seconds: float
    """How long the job is watched (GPU); the time box adds start and finish."""
    dry_seconds: float
    """The same on the CPU dry run."""

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.job}"


STEPS = (
    Step("run", "fp32-matmul", 30, 20),
    Step("run", "pageable-copies", 25, 20),
    Step("run", "input-bound", 30, 20),
    Step("run", "launch-bound", 25, 20),
    Step("run", "item-sync", 25, 20),
    Step("run", "memory-full", 20, 20),
    Step("bare", "fp32-matmul", 25, 20),
    Step("tune", "fp32-matmul", 60, 40),
    Step("attach", "input-bound", 15, 8),
    Step("attach", "launch-bound", 15, 8),
    Step("dashboard", "fp32-matmul", 20, 12),
    Step("run", "fp32-compile", 40, 20),
)
EFFICIENCY = "efficiency"
"""The name `--only` selects the efficiency steps by."""
EFFICIENCY_STEPS = (
    Step("run", "gemm", 25, 15),
    Step("run", "small-gpt", 30, 20),
)


def selected(only: str | None) -> tuple[Step, ...]:
    """The steps named in `only` (comma-separated keys like `run:fp32-matmul`, kinds like
    `attach`, or `efficiency`), in the kit's order; the default kit when `only` is None. A kind
    selects among the default kit's steps; the efficiency steps go by key or by the group."""
    if not only:
        return STEPS
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    every = STEPS + EFFICIENCY_STEPS
    unknown = wanted - {s.key for s in every} - {s.kind for s in every} - {EFFICIENCY}
    if unknown:
        raise ValueError(f"--only: unknown step {sorted(unknown)[0]!r}")
    chosen = [s for s in STEPS if s.key in wanted or s.kind in wanted]
    group = [s for s in EFFICIENCY_STEPS if s.key in wanted or EFFICIENCY in wanted]
    return tuple(chosen + group)
