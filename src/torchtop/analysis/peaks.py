"""Datasheet peaks of GPUs (`peaks.toml`), found from the device name a trace or NVML reports.

MFU and each operator's roofline need the device's limit, and that limit is data with its
source, like a rule: `peaks.toml` holds one entry per product, dense figures only (a "with
sparsity" datasheet figure is halved there). The file is checked as it loads: every entry has a
source, known dtypes with positive figures, valid patterns, and examples that resolve to the entry
itself; a problem is one line naming the file. A CPU's peak is measured instead
(`collectors/cpu_peak.py`); both are a `Peak`.

A name alone does not always say the product: ROCm calls both MI250X and MI250 "AMD Instinct
MI250X / MI250", some releases call a GCD "AMD Radeon Graphics", and one board number covers the
40 and 80 GB A100. So a match may also take the compute-unit count (a trace's `numSms`) and the
memory size, which `match_device_info` passes from a trace's `DeviceInfo`.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from pathlib import Path

import msgspec

from torchtop.analysis.datafile import compile_pattern, read_toml
from torchtop.model.peak import DTYPES, MEASURED, Peak
from torchtop.model.trace import DeviceInfo

__all__ = [
    "DTYPES",
    "MEASURED",
    "PEAKS_FILE",
    "Peak",
    "PeakTableError",
    "load_peak_table",
    "match_device",
    "match_device_info",
]

PEAKS_FILE = Path(__file__).with_name("peaks.toml")


class PeakTableError(ValueError):
    """The peak table is invalid; the message names the file, in one line."""


class _DeviceTable(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    names: list[str]
    examples: list[str]
    source: str
    tflops: dict[str, float]
    tb_s: float | None = None
    compute_units: int | None = None
    memory_gb: float | None = None
    needs_compute_units: list[str] = []
    note: str = ""


class _PeaksFile(msgspec.Struct, forbid_unknown_fields=True):
    device: list[_DeviceTable]


class PeakEntry(msgspec.Struct, frozen=True):
    """One product of the table: its peak and what identifies it."""

    peak: Peak
    names: tuple[re.Pattern[str], ...]
    needs_compute_units: tuple[re.Pattern[str], ...]
    compute_units: int | None
    memory_gb: float | None
    examples: tuple[str, ...]


def match_device(
    name: str,
    *,
    compute_units: int | None = None,
    memory_bytes: int | None = None,
    table: Sequence[PeakEntry] | None = None,
) -> Peak | None:
    """The datasheet peak of the device called `name` ("NVIDIA H100 80GB HBM3", "AMD Instinct
    MI300X", "gfx90a"), or None where the table does not know it. `compute_units` (SMs / CUs)
    and `memory_bytes` decide between products that share a name."""
    entries = load_peak_table() if table is None else table
    found = _resolve(entries, name, compute_units, memory_bytes)
    return None if found is None else found.peak


def match_device_info(device: DeviceInfo) -> Peak | None:
    """`match_device` for a trace's device, with its SM count and memory."""
    return match_device(
        device.name, compute_units=device.sm_count, memory_bytes=device.total_memory_bytes
    )


def _resolve(
    entries: Sequence[PeakEntry], name: str, units: int | None, memory_bytes: int | None
) -> PeakEntry | None:
    found = [e for e in entries if any(p.search(name) for p in e.names)]
    if units is not None:
        generic = [e for e in entries if e.compute_units == units and e not in found]
        found += [e for e in generic if any(p.search(name) for p in e.needs_compute_units)]
        found = [e for e in found if e.compute_units in (None, units)]
    if memory_bytes and len(found) > 1 and all(e.memory_gb for e in found):
        # Stable: equally near entries keep the file's order.
        found.sort(key=lambda e: abs(math.log(memory_bytes / (e.memory_gb or 1.0) / 1e9)))
    return found[0] if found else None


def load_peak_table(path: Path = PEAKS_FILE) -> tuple[PeakEntry, ...]:
    """Every entry of the table at `path`, checked; PeakTableError names the file otherwise."""
    return _load(path)


@functools.cache
def _load(path: Path) -> tuple[PeakEntry, ...]:
    data = read_toml(path, PeakTableError)
    try:
        tables = msgspec.convert(data, _PeaksFile).device
    except msgspec.ValidationError as exc:
        raise PeakTableError(f"{path}: {exc}") from None
    entries = tuple(_entry(path, index, table) for index, table in enumerate(tables))
    _check_whole(path, entries)
    return entries


def _entry(path: Path, index: int, table: _DeviceTable) -> PeakEntry:
    where = f"{path}: device[{index}] ({table.name!r})"
    if not table.source.strip():
        raise PeakTableError(f"{where}: has no source")
    unknown = sorted(set(table.tflops) - set(DTYPES))
    if unknown:
        raise PeakTableError(f"{where}: unknown dtype {unknown[0]!r}; known: {', '.join(DTYPES)}")
    figures = [*table.tflops.values(), *([] if table.tb_s is None else [table.tb_s])]
    if not figures or not all(math.isfinite(x) and x > 0 for x in figures):
        raise PeakTableError(f"{where}: every figure must be a positive number, and one given")
    if not table.names or not table.examples:
        raise PeakTableError(f"{where}: needs at least one of `names` and of `examples`")
    peak = Peak(table.name, dict(table.tflops), table.tb_s, table.source.strip(), table.note)
    return PeakEntry(
        peak=peak,
        names=tuple(_regex(where, p) for p in table.names),
        needs_compute_units=tuple(_regex(where, p) for p in table.needs_compute_units),
        compute_units=table.compute_units,
        memory_gb=table.memory_gb,
        examples=tuple(table.examples),
    )


def _regex(where: str, pattern: str) -> re.Pattern[str]:
    return compile_pattern(where, pattern, PeakTableError, re.IGNORECASE)


def _check_whole(path: Path, entries: Sequence[PeakEntry]) -> None:
    """Names are unique and each example resolves, with the entry's own compute units and
    memory, to the entry it is written under."""
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        if entry.peak.device in seen:
            raise PeakTableError(f"{path}: device[{index}]: {entry.peak.device!r} is listed twice")
        seen.add(entry.peak.device)
        memory = None if entry.memory_gb is None else int(entry.memory_gb * 1e9)
        for example in entry.examples:
            found = _resolve(entries, example, entry.compute_units, memory)
            if found is not entry:
                got = "nothing" if found is None else repr(found.peak.device)
                raise PeakTableError(
                    f"{path}: device[{index}] ({entry.peak.device!r}): "
                    f"its example {example!r} resolves to {got}"
                )
