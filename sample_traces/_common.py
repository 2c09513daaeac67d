"""Shared plumbing for the sample-trace makers in this folder.

Every maker script runs a small, real CPU training job under `torch.profiler` with the
same schedule (wait=1, warmup=1, active=N, repeat=1) and writes one gzipped Kineto trace
per worker through `tensorboard_trace_handler`, exactly as a user's job would. This module
holds the parts they share: the command line (`--out DIR`, `--steps N`), removing a
worker's old trace before writing a new one (so each folder keeps one trace per worker),
the profiler itself, and a one-line summary of what was written.

The makers import it as a sibling module (`import _common`): run them as
`python sample_traces/make_<name>.py`, which puts this folder on `sys.path`.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

HERE = Path(__file__).resolve().parent
SEED = 1234
WAIT_STEPS = 1
WARMUP_STEPS = 1
TRACE_GLOB = "{worker}.*.pt.trace.json*"


def parse_args(job: str, description: str, default_steps: int) -> argparse.Namespace:
    """`--out DIR` (default: the job's folder beside this file) and `--steps N` (profiled)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE / job,
        help=f"folder the trace is written into (default: sample_traces/{job})",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=default_steps,
        help=f"number of profiled (active) steps (default: {default_steps})",
    )
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")
    return args


def total_steps(active: int) -> int:
    """Steps the loop must run so the profiler's schedule completes its one cycle."""
    return WAIT_STEPS + WARMUP_STEPS + active


def seed_everything(seed: int = SEED) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def remove_old_traces(out: Path, worker: str) -> None:
    """Delete this worker's earlier traces in `out`, so the folder keeps exactly one."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(TRACE_GLOB.format(worker=worker)):
        old.unlink()


def make_profiler(out: Path, worker: str, active: int) -> profile:
    """A CPU-only profiler with the shared schedule, writing `<worker>.<ts>.pt.trace.json.gz`."""
    remove_old_traces(out, worker)
    return profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT_STEPS, warmup=WARMUP_STEPS, active=active, repeat=1),
        on_trace_ready=tensorboard_trace_handler(str(out), worker_name=worker, use_gzip=True),
        record_shapes=False,
        with_stack=False,
        profile_memory=False,
    )


def written_traces(out: Path, worker: str) -> list[Path]:
    return sorted(out.glob(TRACE_GLOB.format(worker=worker)))


def report(job: str, out: Path, worker: str, started: float) -> None:
    """Print what was written and how long the job took; fail if nothing was written."""
    traces = written_traces(out, worker)
    if len(traces) != 1:
        raise SystemExit(f"{job}: expected one trace for {worker} in {out}, found {len(traces)}")
    size_kb = traces[0].stat().st_size / 1024
    elapsed = time.perf_counter() - started
    print(f"{job}: wrote {traces[0]} ({size_kb:.0f} KB) in {elapsed:.1f} s")
