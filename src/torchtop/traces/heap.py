"""Give the pages of freed memory back to the system (glibc's `malloc_trim`).

A trace's columns are built from many small arrays, one a piece of the file, that glibc's
allocator takes from its heap; once they are joined and freed, the heap keeps their pages (only
its top shrinks by itself), so the process would carry them through the analysis that follows:
on the 1 GB trace, ~100 MB over its columns. `malloc_trim(0)` returns every free page (~20 ms
after reading that trace). Elsewhere than glibc, nothing is done.

Tried and left: fixing glibc's threshold for giving a block its own mapping at 128 KB
(`mallopt`), so that every freed temporary of the analysis goes back at once: 12 MiB less at the
peak of the 1 GB trace, for 1.4 s more system time (each temporary's pages faulted in anew).

Why often: a big trace's reading leaves the heap with hundreds of MB of holes, given back but
still the heap's. Each temporary of the analysis is cut from a hole (a free block is taken
before a new mapping, whatever its size), its pages come back as it is written and stay once it
is freed: the resident size of a stage grows by everything it allocated, not by what it held at
once. `let_go` between the steps of a stage keeps it near the latter (the 10.6 GB trace's GPU
metrics: +472 MiB over their start, against +257 MiB held at most).
"""

from __future__ import annotations

import ctypes
import sys

_libc: list[ctypes.CDLL | None] = []

LET_GO_ITEMS = 1_000_000
"""From this many items (events, intervals) `let_go` trims the heap (0.5-6 ms a call)."""


def let_go(items: int) -> None:
    """`release_freed_memory` between the steps of work over `items` things, where they are
    enough for the freed pages to count."""
    if items >= LET_GO_ITEMS:
        release_freed_memory()


def release_freed_memory() -> None:
    """Return the heap's free pages to the system, where the C library can (glibc)."""
    if not _libc:
        _libc.append(_load_glibc())
    libc = _libc[0]
    if libc is not None:
        libc.malloc_trim(0)


def _load_glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        # The process's own symbols, libc's among them: `ctypes.util.find_library` would import
        # subprocess, tempfile and shutil (~15 ms of `analyze`'s start-up) to find the same file.
        libc = ctypes.CDLL(None)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None  # musl and others have no malloc_trim
    return libc
