"""Time `torchtop analyze` on a folder of many rank traces, and check each rank's numbers.

What it measures: the wall time of `torchtop analyze DIR --format json` (a fresh process, as a
user runs it) on a folder of N rank traces, and the time per rank. The folder is built from a
real job: by default the 8 ranks of `param/dlrm_kineto` (one DLRM training step on 8 V100s, DDP
with NCCL) in `../shared/traces` (`--source` names another folder of real rank traces, e.g.
`hta/trace_diff/control`, one 1.8 MB rank of an 8-GPU NCCL job), repeated with shifted rank ids
(`distributedInfo.rank`, `world_size`) up to N files, so every file is a real rank's trace and
the analysis does real work on each.

The outside truth: each copy's figures (step time, breakdown, bottleneck) must equal those of
its source rank analysed on its own (`torchtop analyze FILE`), and the report must list N ranks.
A mismatch is printed and the script exits 1.

Runs go in rounds (`--rounds`, median reported); the machine and core count are printed, since
`analyze` reads the files one per core (`fanout.py`).

    python benchmarks/many_ranks.py [--ranks 64] [--rounds 3] [--traces ../shared/traces]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = "param/dlrm_kineto"
COMPARED = ("steps", "breakdown", "bottleneck")


def analyze(path: Path) -> dict[str, object]:
    result = subprocess.run(
        ["torchtop", "analyze", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    report: dict[str, object] = json.loads(result.stdout)
    return report


def build(sources: list[Path], ranks: int, folder: Path) -> dict[int, Path]:
    """`ranks` trace files in `folder`; returns each new rank id's source file."""
    documents = []
    for source in sources:
        with gzip.open(source, "rt", encoding="utf-8") as handle:
            documents.append((source, json.load(handle)))
    origin: dict[int, Path] = {}
    for new_rank in range(ranks):
        source, document = documents[new_rank % len(documents)]
        copy = dict(document)
        copy["distributedInfo"] = {
            **document.get("distributedInfo", {}),
            "rank": new_rank,
            "world_size": ranks,
        }
        target = folder / f"rank-{new_rank}.pt.trace.json.gz"
        with gzip.open(target, "wt", encoding="utf-8", compresslevel=1) as handle:
            json.dump(copy, handle)
        origin[new_rank] = source
    return origin


def rank_entry(report: dict[str, object], rank: int) -> dict[str, object]:
    ranks = report.get("ranks")
    assert isinstance(ranks, list)
    return next(r for r in ranks if r.get("rank") == rank)


def check(report: dict[str, object], origin: dict[int, Path]) -> list[str]:
    """Each copy against its source rank analysed alone: the same figures."""
    problems = []
    ranks = report.get("ranks")
    if not isinstance(ranks, list) or len(ranks) != len(origin):
        return [f"report lists {len(ranks) if isinstance(ranks, list) else 0} ranks"]
    alone = {source: analyze(source) for source in set(origin.values())}
    for new_rank, source in origin.items():
        entry = rank_entry(report, new_rank)
        own = alone[source]
        for key in COMPARED:
            mine = entry.get(key)
            theirs = own.get(key)
            if key == "steps" and isinstance(mine, dict) and isinstance(theirs, dict):
                mine = {k: mine.get(k) for k in ("count", "mean_ms", "p50_ms")}
                theirs = {k: theirs.get(k) for k in ("count", "mean_ms", "p50_ms")}
            if mine != theirs:
                problems.append(f"rank {new_rank} ({source.name}): {key} {mine} != {theirs}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--traces", type=Path, default=Path("../shared/traces"))
    parser.add_argument(
        "--source", default=SOURCE, help="folder of real rank traces under --traces to repeat"
    )
    args = parser.parse_args()
    sources = sorted((args.traces / args.source).glob("*.json.gz"))
    if not sources:
        print(f"{args.traces / args.source}: no .json.gz traces found", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="torchtop-ranks-"))
    try:
        origin = build(sources, args.ranks, folder)
        size_mb = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        analyze(folder)  # warm the page cache and the rule cache
        walls = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            report = analyze(folder)
            walls.append(time.perf_counter() - start)
        problems = check(report, origin)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    median_s = statistics.median(walls)
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}")  # fmt: skip
    print(f"{args.ranks} rank traces ({len(sources)} real rank(s) of {args.source} repeated), "
          f"{size_mb:.1f} MB gz")  # fmt: skip
    per_rank_ms = median_s / args.ranks * 1000
    spread = f"min {min(walls):.2f}, max {max(walls):.2f}"
    print(f"analyze: median {median_s:.2f} s over {args.rounds} rounds ({spread}); "
          f"{per_rank_ms:.1f} ms per rank")  # fmt: skip
    verdict = "identical" if not problems else "DIFFERENT"
    print(f"each rank against its source analysed alone: {verdict}")
    for problem in problems[:10]:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
