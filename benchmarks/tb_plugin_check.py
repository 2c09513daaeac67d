"""Compare torchtop's step-time breakdown with torch-tb-profiler's final source, trace by trace.

The oracle is the `tb_plugin` source as of its last kineto commit (`../shared/oracles/`, see its
README), run as a library in a child process (it needs `tensorboard`). For each trace the script
prints both breakdowns (eight shares of the mean step) and the largest difference once
torchtop's two deliberate differences are folded back (`docs/verdicts.md`): torchtop counts
collectives as communication by their names (a kernel by its own, a host range by its
library's prefix) where tb_plugin knows ten host range names and counts a kernel only when it
shares its external id with one of those ranges; and it counts copy operators on a CPU-only
trace as memcpy where tb_plugin counts them as CPU Exec. The fold is torchtop's own breakdown
with both turned off (`breakdown.TB_PLUGIN`), so it is exact kernel by kernel.

Usage: python benchmarks/tb_plugin_check.py TRACE_OR_FOLDER... [--oracle DIR]
       [--oracle-python PY] [--record FILE] [--replay FILE] [--tolerance 0.02]
`--record FILE` writes the oracle's figures as JSON (the tests read them from
tests/analysis/data/tb_plugin_oracle.json); `--replay FILE` compares with recorded figures
instead of running the oracle. Exit status 1 when a trace differs by more than the tolerance
after the fold, 2 when the oracle cannot run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from torchtop.analysis.breakdown import CATEGORIES, TB_PLUGIN, TORCHTOP, role_sets, step_costs
from torchtop.analysis.steps import find_steps
from torchtop.traces import find_trace_files, read_trace

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ORACLE = ROOT.parent / "shared" / "oracles" / "tb_plugin-041e7ce"
# tb_plugin's ProfileRole names, in torchtop's category order.
ROLE_NAMES = dict(
    zip(
        CATEGORIES,
        ("Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CpuOp", "Other"),
        strict=True,
    )
)

ORACLE_SCRIPT = """
import json, logging, sys, tempfile
logging.disable(logging.WARNING)
from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.event_parser import ProfileRole
for path in sys.argv[1:]:
    try:
        with tempfile.TemporaryDirectory() as cache:
            profile = RunProfileData.parse("worker0", 1, path, cache)
        costs = profile.avg_costs.costs
        total = costs[ProfileRole.Total]
        shares = {r.name: costs[r] / total if total else None
                  for r in ProfileRole if r != ProfileRole.Total}
        row = {"shares": shares, "steps": list(profile.steps_names or [])}
    except Exception as exc:
        row = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps({path: row}), flush=True)
"""


def run_oracle(paths: list[Path], oracle: Path, python: str) -> dict[str, Any]:
    """The oracle's figures per trace path, from one child process for all of them."""
    if not (oracle / "torch_tb_profiler").is_dir():
        raise SystemExit(f"tb_plugin_check: {oracle}: no torch_tb_profiler source there")
    env = dict(os.environ, PYTHONPATH=str(oracle))
    done = subprocess.run(
        [python, "-c", ORACLE_SCRIPT, *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"tb_plugin_check: the oracle failed: {last}", file=sys.stderr)
        raise SystemExit(2)
    found: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        found.update(json.loads(line))
    return found


def torchtop_shares(path: Path) -> dict[str, dict[str, float]]:
    """torchtop's breakdown of one file, as it reports it and with the differences folded."""
    trace = read_trace(path)
    steps = find_steps(trace)
    shares = {}
    for label, accounting in (("torchtop", TORCHTOP), ("folded", TB_PLUGIN)):
        costs = step_costs(role_sets(trace, accounting), steps)
        shares[label] = {c: costs.share(c) for c in CATEGORIES}
    return shares


def oracle_shares(row: dict[str, Any]) -> dict[str, float] | None:
    if "error" in row:
        return None
    return {c: float(row["shares"][ROLE_NAMES[c]] or 0.0) for c in CATEGORIES}


def largest_difference(ours: dict[str, float], theirs: dict[str, float]) -> tuple[str, float]:
    category = max(CATEGORIES, key=lambda c: abs(ours[c] - theirs[c]))
    return category, ours[category] - theirs[category]


def key_of(path: Path) -> str:
    """A trace's name in a recording: relative to the checkout, so it reads
    `../shared/traces/...` or `sample_traces/...` wherever the checkout lies."""
    return Path(os.path.relpath(path.resolve(), ROOT)).as_posix()


def _line(label: str, shares: dict[str, float]) -> str:
    return f"  {label:10s}" + " ".join(f"{c[:8]:>8s} {shares[c]:6.3f}" for c in CATEGORIES)


def report(paths: list[Path], oracle: dict[str, Any], tolerance: float) -> int:
    """Print each trace's breakdowns; the number of traces beyond the tolerance."""
    beyond = 0
    for path in paths:
        row = oracle.get(key_of(path)) or oracle.get(str(path)) or {"error": "not recorded"}
        theirs = oracle_shares(row)
        mine = torchtop_shares(path)
        print(key_of(path))
        if theirs is None:
            print(f"  tb_plugin could not read it: {row['error']}")
            continue
        for label, shares in (("tb_plugin", theirs), *mine.items()):
            print(_line(label, shares))
        raw = largest_difference(mine["torchtop"], theirs)
        folded = largest_difference(mine["folded"], theirs)
        verdict = "ok" if abs(folded[1]) <= tolerance else "BEYOND"
        beyond += verdict != "ok"
        print(
            f"  largest difference: {raw[0]} {raw[1]:+.3f} as reported, "
            f"{folded[0]} {folded[1]:+.3f} after the fold: {verdict}"
        )
    return beyond


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="trace files or folders of traces")
    ap.add_argument("--oracle", type=Path, default=DEFAULT_ORACLE, help="tb_plugin source folder")
    ap.add_argument("--oracle-python", default=sys.executable, help="python with tensorboard")
    ap.add_argument("--record", type=Path, help="write the oracle's figures to this JSON file")
    ap.add_argument("--replay", type=Path, help="read the oracle's figures from this JSON file")
    ap.add_argument("--tolerance", type=float, default=0.02)
    args = ap.parse_args(argv)
    paths = find_trace_files(args.paths)
    if args.replay:
        oracle = json.loads(args.replay.read_text())["traces"]
    else:
        found = run_oracle(paths, args.oracle, args.oracle_python)
        oracle = {key_of(Path(p)): row for p, row in found.items()}
    if args.record:
        command = "python benchmarks/tb_plugin_check.py " + " ".join(args.paths)
        document = {"command": command + f" --record {args.record}", "traces": oracle}
        args.record.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    beyond = report(paths, oracle, args.tolerance)
    print(f"{len(paths) - beyond} of {len(paths)} traces within {args.tolerance} after the fold")
    return 1 if beyond else 0


if __name__ == "__main__":
    sys.exit(main())
