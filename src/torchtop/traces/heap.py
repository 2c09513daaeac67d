"""Keep freed memory from staying resident (glibc's allocator, through `mallopt` and
`malloc_trim`).

A trace's columns are built from many small arrays, one a piece of the file, that glibc's
allocator takes from its heap; once they are joined and freed, the heap keeps their pages
(only its top can shrink by itself). And glibc raises its threshold for serving a block from
its own mapping each time such a block is freed (up to 32 MB), so the analysis's temporary
arrays of a few MB end up on the heap too, where freeing them returns nothing. Both kept a
process's resident memory at its high-water mark: on the 1 GB trace, ~100 MB over its
columns. `bound_heap` fixes the threshold at 128 KB (every bigger array is its own mapping,
returned when freed) and `release_freed_memory` returns the heap's free pages (~20 ms after
reading the 1 GB trace). Elsewhere than glibc, nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's `mallopt` parameters (malloc.h)."""

MMAP_THRESHOLD_BYTES = 128 << 10
"""Blocks from this size up get their own mapping: glibc's starting value, kept fixed."""

TRIM_THRESHOLD_BYTES = 1 << 20
"""Free memory at the heap's top beyond this is returned at once."""

_libc: list[ctypes.CDLL | None] = []


def bound_heap() -> None:
    """Fix the allocator's thresholds (see the module's docstring); once per process."""
    libc = _glibc()
    if libc is not None and len(_libc) == 1:
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
        _libc.append(libc)  # marks it done


def release_freed_memory() -> None:
    """Return the heap's free pages to the system, where the C library can (glibc)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def _glibc() -> ctypes.CDLL | None:
    if not _libc:
        _libc.append(_load_glibc())
    return _libc[0]


def _load_glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    except (OSError, AttributeError):
        return None  # musl and others have neither
    return libc
