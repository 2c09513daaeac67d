"""A big trace's memory track is kept in a file and mapped back: the analysis of real traces is
the same with it spilled, its pages leave this process once read and let go, and where the file
could only take memory too (tmpfs) or cannot be written, the track stays as it was."""

from __future__ import annotations

import mmap
from pathlib import Path

import msgspec
import numpy as np
import pytest

from tests.conftest import RESNET_NW0
from torchtop.analysis.summary import analyze_trace
from torchtop.traces import read_trace, spill
from torchtop.traces.data import MemoryTrack

WITH_MEMORY = [
    RESNET_NW0,
    "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    "hta/df_index_resolver/df_index_resolver.json.gz",
]
MIB = 1 << 20


def resident_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * mmap.PAGESIZE / MIB


def encoded(analysis: object) -> bytes:
    return msgspec.json.encode(analysis, enc_hook=lambda value: np.asarray(value).tolist())


def track(rows: int) -> MemoryTrack:
    rng = np.random.default_rng(7)
    return MemoryTrack(
        ts_us=np.cumsum(rng.random(rows)),
        bytes=rng.integers(-(1 << 20), 1 << 20, rows).astype(np.float64),
        total_allocated=rng.random(rows) * 1e9,
        device=np.broadcast_to(np.int32(0), (rows,)),  # a constant: nothing to spill
        address=rng.integers(0, 1000, rows).astype(np.int32),
    )


@pytest.mark.parametrize("name", WITH_MEMORY, ids=lambda n: Path(n).parent.name)
def test_a_real_traces_analysis_is_the_same_with_its_memory_track_spilled(
    shared: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = read_trace(shared / name)
    assert len(kept.memory.ts_us) > 0
    monkeypatch.setattr(spill, "SPILL_BYTES", 0)
    spilled = read_trace(shared / name)
    mapped = [a for a in msgspec.structs.astuple(spilled.memory) if a.strides[0] != 0]
    assert mapped and all(not a.flags.writeable for a in mapped)  # views of the file
    for field in spilled.memory.__struct_fields__:
        assert np.array_equal(
            getattr(spilled.memory, field), getattr(kept.memory, field), equal_nan=True
        )
    # Every stage reads the track where it would have, and none writes it (it cannot).
    assert encoded(analyze_trace(spilled)) == encoded(analyze_trace(kept))


def test_the_pages_of_a_spilled_track_leave_once_let_go(tmp_path: Path) -> None:
    original = track(3_000_000)  # 86 MiB that hold memory
    expected = {field: getattr(original, field).copy() for field in original.__struct_fields__}
    spilled = spill.spilled(original, str(tmp_path))
    assert spilled is not original
    assert spilled.device is original.device
    del original
    for field, values in expected.items():
        assert np.array_equal(getattr(spilled, field), values)
    spill.drop_pages(spilled)
    before = resident_mib()
    total = float(spilled.ts_us.sum() + spilled.bytes.sum() + spilled.total_allocated.sum())
    assert resident_mib() - before > 60  # read: its pages came in
    spill.drop_pages(spilled)
    assert resident_mib() - before < 10
    again = float(spilled.ts_us.sum() + spilled.bytes.sum() + spilled.total_allocated.sum())
    assert again == total  # and come back as they were
    assert list(tmp_path.iterdir()) == []  # the file was unlinked as soon as it was mapped


def test_a_track_under_the_threshold_stays_as_it_is(tmp_path: Path) -> None:
    small = track(1000)
    assert spill.spilled(small, str(tmp_path)) is small


def test_a_folder_in_memory_or_one_that_cannot_be_written_keeps_the_track(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill, "SPILL_BYTES", 0)
    big = track(10_000)
    assert spill.spilled(big, str(tmp_path / "absent")) is big
    shm = Path("/dev/shm")
    mounts = Path("/proc/self/mounts").read_text().split("\n")
    if not any(line.split()[1:3] == [str(shm), "tmpfs"] for line in mounts if line):
        pytest.skip("/dev/shm is not a tmpfs here")
    assert spill.spilled(big, str(shm)) is big
    assert spill.spilled(big, str(tmp_path)) is not big  # on disk it spills
