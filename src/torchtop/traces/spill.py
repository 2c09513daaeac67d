"""Columns kept in a file and mapped back, so that they hold memory only while they are read.

A big trace's memory track (every `[memory]` event: eight columns, 191 MiB of the 10.6 GB
trace's 590) is read twice, by the GPU's peak memory and by the memory profile, and carried
through everything between. `spilled` writes such columns to an unlinked temporary file and
returns read-only views of its mapping: their pages come in from the page cache as they are
read and `drop_pages` gives them back after, where anonymous memory would stay resident to the
end. The values are the same bytes, so every figure made of them is too.

Not where the temporary folder is in memory (tmpfs, ramfs): the file would take the same
memory, only out of this process's count. Nor where the file cannot be written (a full disk,
no temporary folder): the columns then stay as they are.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import msgspec
import numpy as np

SPILL_BYTES = 64 << 20
"""Columns of a struct spill from this many bytes together (the memory track of ~1.7M events)."""
_ALIGN = 64
_IN_MEMORY = frozenset({"tmpfs", "ramfs", "hugetlbfs"})

S = TypeVar("S", bound=msgspec.Struct)


def spilled(struct: S, folder: str | None = None) -> S:
    """`struct` with its array fields (those that hold memory: not a constant's view) read
    from a file in `folder` (default: the temporary folder), or `struct` itself where they
    are under `SPILL_BYTES` or cannot be spilled."""
    fields = {
        name: value
        for name in struct.__struct_fields__
        if isinstance(value := getattr(struct, name), np.ndarray) and _holds_memory(value)
    }
    if sum(a.nbytes for a in fields.values()) < SPILL_BYTES:
        return struct
    # Only for a big memory track: tempfile (with shutil and random) costs a small trace's
    # `analyze` its import.
    import tempfile

    where = folder if folder is not None else tempfile.gettempdir()
    if _in_memory(where):
        return struct
    try:
        views = _written_and_mapped(fields, where)
    except (OSError, ValueError):
        return struct
    return msgspec.structs.replace(struct, **views)


def drop_pages(struct: msgspec.Struct) -> None:
    """Give back the pages of `struct`'s spilled fields that reading them brought in; they
    are read again from the file (or the page cache) when next used."""
    done: set[int] = set()
    for mapping in _mappings(struct):
        if id(mapping) not in done:
            done.add(id(mapping))
            _drop(mapping)


def _written_and_mapped(fields: dict[str, np.ndarray], folder: str) -> dict[str, np.ndarray]:
    import tempfile

    places: dict[str, int] = {}
    with tempfile.TemporaryFile(dir=folder) as file:  # unlinked: gone with its last mapping
        offset = 0
        for name, array in fields.items():
            file.seek(offset)
            file.write(np.ascontiguousarray(array).data)
            places[name] = offset
            offset += -(-array.nbytes // _ALIGN) * _ALIGN
        file.truncate(offset)  # the last column's padding
        file.flush()
        mapping = mmap.mmap(file.fileno(), offset, access=mmap.ACCESS_READ)
    views = {
        name: np.frombuffer(mapping, array.dtype, len(array), places[name])
        for name, array in fields.items()
    }
    _drop(mapping)  # written, not yet read: nothing of it need be here
    return views


def _drop(mapping: mmap.mmap) -> None:
    if hasattr(mmap, "MADV_DONTNEED") and not mapping.closed:
        mapping.madvise(mmap.MADV_DONTNEED)


def _mappings(struct: msgspec.Struct) -> Iterator[mmap.mmap]:
    for name in struct.__struct_fields__:
        base = getattr(struct, name)
        while isinstance(base, np.ndarray | memoryview):
            base = base.base if isinstance(base, np.ndarray) else base.obj
        if isinstance(base, mmap.mmap):
            yield base


def _holds_memory(array: np.ndarray) -> bool:
    return array.ndim == 1 and array.nbytes > 0 and array.strides[0] != 0


def _in_memory(folder: str) -> bool:
    """Whether `folder` lies on a file system kept in memory (Linux's mount table; elsewhere
    it is taken to be a disk)."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return False
    target = os.path.realpath(folder)
    best, kind = "", ""
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind in _IN_MEMORY
