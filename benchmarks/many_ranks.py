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

`--cluster ADDRESS` (`local:2`, or a running scheduler's `tcp://host:8786`) also runs
`analyze --cluster ADDRESS` in each round, after the local pool: the wall time of each and the
peak memory of the client and of its workers (the resident sets of the command's process and of
its descendants, summed, sampled every 20 ms with psutil; a remote cluster's workers are not on
this machine and not measured), and whether the two reports are byte for byte the same.

    python benchmarks/many_ranks.py [--ranks 64] [--rounds 3] [--traces ../shared/traces]
                                    [--cluster local:2]
"""

from __future__ import annotations

import argparse
import contextlib
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
from dataclasses import dataclass
from pathlib import Path

import psutil

SOURCE = "param/dlrm_kineto"
COMPARED = ("steps", "breakdown", "bottleneck")
SAMPLE_EVERY_S = 0.02


@dataclass
class Run:
    """One `torchtop analyze` measured from outside."""

    wall_s: float
    stdout: bytes
    client_peak_bytes: int
    workers_peak_bytes: int
    """The command's descendants' resident sets, summed, at their highest sample."""


def measured(command: list[str]) -> Run:
    """`command` run to its end, its process tree's memory sampled while it runs."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        job = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
        client_peak = workers_peak = 0
        root = psutil.Process(job.pid)
        while job.poll() is None:
            client, workers = _tree_rss(root)
            client_peak, workers_peak = max(client_peak, client), max(workers_peak, workers)
            time.sleep(SAMPLE_EVERY_S)
        wall_s = time.perf_counter() - start
        if job.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {job.returncode}")
        out.seek(0)
        return Run(wall_s, out.read(), client_peak, workers_peak)


def _tree_rss(root: psutil.Process) -> tuple[int, int]:
    """The resident set of `root`, and of its descendants summed (0 for what has ended)."""
    try:
        client = root.memory_info().rss
        children = root.children(recursive=True)
    except psutil.Error:
        return 0, 0
    workers = 0
    for child in children:
        with contextlib.suppress(psutil.Error):  # ended since it was listed
            workers += child.memory_info().rss
    return client, workers


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
    parser.add_argument(
        "--cluster", metavar="ADDRESS", help="also analyse on this Dask cluster (local:2)"
    )
    args = parser.parse_args()
    sources = sorted((args.traces / args.source).glob("*.json.gz"))
    if not sources:
        print(f"{args.traces / args.source}: no .json.gz traces found", file=sys.stderr)
        return 2
    folder = Path(tempfile.mkdtemp(prefix="torchtop-ranks-"))
    command = ["torchtop", "analyze", str(folder), "--format", "json"]
    try:
        origin = build(sources, args.ranks, folder)
        size_mb = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        analyze(folder)  # warm the page cache and the rule cache
        local: list[Run] = []
        spread: list[Run] = []
        for _ in range(args.rounds):  # interleaved, so a change of load hits both alike
            local.append(measured(command))
            if args.cluster:
                spread.append(measured([*command, "--cluster", args.cluster]))
        problems = check(json.loads(local[-1].stdout), origin)
        problems += [f"round {k + 1}: the --cluster report differs from the local one"
                     for k, run in enumerate(spread) if run.stdout != local[k].stdout]  # fmt: skip
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}")  # fmt: skip
    print(f"{args.ranks} rank traces ({len(sources)} real rank(s) of {args.source} repeated), "
          f"{size_mb:.1f} MB gz")  # fmt: skip
    show("analyze", local, args.ranks)
    if spread:
        here = args.cluster.partition(":")[0] == "local"  # else its workers are elsewhere
        show(f"analyze --cluster {args.cluster}", spread, args.ranks, workers_here=here)
        same = not any("--cluster" in problem for problem in problems)
        print("report through --cluster against the local one: "
              f"{'byte-identical' if same else 'DIFFERENT'}")  # fmt: skip
    verdict = "identical" if not problems else "DIFFERENT"
    print(f"each rank against its source analysed alone: {verdict}")
    for problem in problems[:10]:
        print("  " + problem)
    return 1 if problems else 0


def show(what: str, runs: list[Run], ranks: int, workers_here: bool = True) -> None:
    """The rounds' median wall time and the highest memory any round reached."""
    walls = [run.wall_s for run in runs]
    median_s = statistics.median(walls)
    spread = f"min {min(walls):.2f}, max {max(walls):.2f}"
    print(f"{what}: median {median_s:.2f} s over {len(runs)} rounds ({spread}); "
          f"{median_s / ranks * 1000:.1f} ms per rank")  # fmt: skip
    client_mb = max(run.client_peak_bytes for run in runs) / 1e6
    workers_mb = max(run.workers_peak_bytes for run in runs) / 1e6
    workers = f"{workers_mb:.0f} MB (summed)" if workers_here else "not on this machine"
    print(f"  peak RSS: client {client_mb:.0f} MB, its workers {workers}")


if __name__ == "__main__":
    raise SystemExit(main())
