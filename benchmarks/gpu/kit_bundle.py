"""What comes back from the device: the step folders' small files in one tar.gz under 16 MiB.

The device tool returns at most 8 files of 16 MiB each, two folders deep, so the run folders
travel bundled: reports, logs, samples, agent events and the tune trials first, then profiler
traces while the archive stays under `LIMIT_BYTES`.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

LIMIT_BYTES = 14 * 2**20
SMALL_BYTES = 4 * 2**20
FIRST = ("*.json", "*.txt", "*.jsonl", "*.toml", "*.log")


def bundle(work: Path, target: Path) -> dict[str, int]:
    """Packs `work` into `target` (small files first, traces while room is left)."""
    added = skipped = 0
    small = sorted({p for pattern in FIRST for p in work.rglob(pattern) if p.is_file()})
    traces = sorted(p for p in work.rglob("*.pt.trace.json*") if p.is_file())
    with tarfile.open(target, "w:gz") as archive:
        for path in [p for p in small if p not in traces] + traces:
            size = path.stat().st_size
            packed = size if path.suffix == ".gz" else size // 4
            if size > SMALL_BYTES or target.stat().st_size + packed > LIMIT_BYTES:
                skipped += 1
                continue
            archive.add(path, arcname=str(path.relative_to(work.parent)))
            added += 1
    return {"files": added, "skipped": skipped, "bytes": target.stat().st_size}
