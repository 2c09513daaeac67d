"""The run state's buffers: each sample source keeps its own newest records, no more."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from torchtop.assess.attached import RECENT_DUMPS
from torchtop.runs.journal import JournalWriter
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import GpuSample, HostSample, JournalRecord, StacksSample
from torchtop.runs.state import MAX_SAMPLES, MAX_STACK_DUMPS, load_run
from torchtop.tui.hotstacks import DUMPS_COUNTED


def test_the_stack_dump_bound_covers_every_reader_of_stack_dumps() -> None:
    assert max(RECENT_DUMPS, DUMPS_COUNTED) == MAX_STACK_DUMPS


def test_a_run_keeps_only_the_newest_stack_dumps_and_its_hour_of_host_and_gpu_samples(
    tmp_path: Path,
) -> None:
    layout = RunLayout(tmp_path / "run")
    layout.create()
    written = MAX_SAMPLES + 5
    kinds: dict[str, Callable[[float], JournalRecord]] = {
        "host": lambda t: HostSample(t=t),
        "gpu": lambda t: GpuSample(t=t),
        "stacks": lambda t: StacksSample(t=t),
    }
    for source, kind in kinds.items():
        with JournalWriter(layout.samples(source)) as writer:
            for second in range(written):
                writer.write(kind(float(second)))

    samples = load_run(layout.root).samples

    assert [r.t for r in samples.stacks] == [
        float(s) for s in range(written - MAX_STACK_DUMPS, written)
    ]
    for kept in (samples.host, samples.gpu):
        assert len(kept) == MAX_SAMPLES
        assert kept[0].t == float(written - MAX_SAMPLES)
        assert kept[-1].t == float(written - 1)
