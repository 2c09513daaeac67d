"""The checked rule tree kept between runs: parsing and checking the TOML took ~24 ms of every
`analyze`, unpickling the tree ~2 ms.

A stored tree is used only while everything it was built and checked from is as it was: the
exact bytes of the rule files (the caller's part of the key), the code that parses and checks
them (`BUILDERS`), the vocabularies it checks against (the metric names and classes by value,
the knob catalogue by file), and the Python and msgspec that pickled it. A metric removed from
`analysis/metric_names.py` must fail the rules that name it, not leave them served from a tree
checked before it went.
"""

from __future__ import annotations

import contextlib
import os
import sys
import zlib
from pathlib import Path

import msgspec

from torchtop.analysis.metric_names import CLASSES, METRICS

BUILDERS = (
    "diagnosis/rules.py",
    "diagnosis/schema.py",
    "diagnosis/fix_check.py",
    "diagnosis/expressions.py",
    "diagnosis/rule_cache.py",
    "model/findings.py",
    "model/analysis.py",
    "model/memory.py",
    "model/efficiency.py",
    "model/peak.py",
    "model/trace.py",
    "model/knobs.py",
    "model/fix_values.py",
    "analysis/metric_names.py",
    "analysis/datafile.py",
)
"""Every module that building the tree imports, relative to the package (a changed field
order would otherwise unpickle into the wrong fields; a changed vocabulary would skip the
check); a test keeps the list whole."""


def cache_dir() -> Path:
    """`$TORCHTOP_CACHE_DIR`, else `$XDG_CACHE_HOME/torchtop`, else `~/.cache/torchtop`."""
    chosen = os.environ.get("TORCHTOP_CACHE_DIR")
    if chosen:
        return Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchtop"


def cache_file(directory: Path) -> Path:
    where = os.path.realpath(directory).encode("utf-8", "surrogateescape")
    return cache_dir() / f"rules-{zlib.crc32(where):08x}.pickle"


def code_fingerprint() -> tuple[object, ...]:
    """The builders' files as they are, the vocabularies as they are, and the interpreter and
    msgspec (one checkout may be used by several interpreters, whose `ast` nodes differ)."""
    package = Path(__file__).resolve().parents[1]
    stats = [os.stat(package / name) for name in BUILDERS]
    files = tuple((stat.st_mtime_ns, stat.st_size) for stat in stats)
    vocabulary = (tuple(METRICS), CLASSES)
    return (sys.version_info[:3], msgspec.__version__, files, vocabulary)


def cached(cache: Path, key: object) -> object | None:
    """What was stored for exactly this key, if anything; anything odd is a miss."""
    import pickle

    try:
        stored_key, stored = pickle.loads(cache.read_bytes())
    except Exception:  # missing, unreadable, truncated, from another version: build anew
        return None
    return stored if stored_key == key else None


def store(cache: Path, key: object, value: object) -> None:
    """Keep `value` for next time; a cache folder that cannot be written is left alone."""
    import pickle

    temporary = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(temporary, cache)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
