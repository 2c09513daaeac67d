"""The job's Python stacks sampled into its run folder for a while (a `with` block), as `run`
samples them: what `tune`'s runs give the diagnosis so that it can put a code fix on a line of
the job. Only where no step is being measured: a dump stops the job for a moment."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from torchtop.collectors.sampler import Sampler
from torchtop.collectors.stacks import StackCollector
from torchtop.runs.journal import JournalWriter
from torchtop.runs.layout import RunLayout

STACKS_EVERY_S = 0.5


@contextlib.contextmanager
def stacks_sampled(pid: int, run_dir: Path) -> Iterator[None]:
    """Stacks of the job started as `pid`, every `STACKS_EVERY_S`, into `run_dir`'s samples."""
    writer = JournalWriter(RunLayout(run_dir).samples("stacks"))
    sampler = Sampler("stacks", STACKS_EVERY_S, StackCollector(pid).sample, writer).start()
    try:
        yield
    finally:
        sampler.stop()
        writer.close()
