"""Check that this checkout's `analyze` reports are byte for byte those of another checkout.

For a change that must not move any figure (the reader's memory, say): every input is analysed
by both checkouts (`python -m torchtop analyze INPUT --format FORMAT`, each with its own `src`
first on the path) in one process and with the reading worker forced on every file
(`TORCHTOP_READ_WORKERS=1` and `2`), and the outputs are compared byte for byte. The inputs
default to every trace file under `../shared/traces`, the traces of `sample_traces/`, and the
folders of ranks among them (read as one job).

Usage::

    python benchmarks/report_identity.py --baseline /other/checkout/src [INPUT ...]
        [--formats json,text] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"
TRACE_SUFFIXES = (".json", ".json.gz")


def default_inputs() -> list[Path]:
    """Every trace file, and every folder holding two or more of them."""
    files = sorted(
        p
        for root in (SHARED_TRACES, REPO / "sample_traces")
        for p in root.rglob("*")
        if p.is_file() and p.name.endswith(TRACE_SUFFIXES)
    )
    folders = sorted({p.parent for p in files if sum(q.parent == p.parent for q in files) > 1})
    return files + folders


def report(src: Path, target: Path, output: str, workers: str) -> tuple[int, bytes]:
    env = dict(os.environ, PYTHONPATH=str(src), TORCHTOP_READ_WORKERS=workers)
    argv = [sys.executable, "-m", "torchtop", "analyze", str(target), "--format", output]
    done = subprocess.run(argv, env=env, capture_output=True, timeout=600, check=False)
    return done.returncode, done.stdout + b"\n--stderr--\n" + done.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="*", type=Path)
    ap.add_argument("--baseline", type=Path, required=True, help="the other checkout's src")
    ap.add_argument("--formats", default="json,text")
    ap.add_argument("--workers", default="1,2")
    args = ap.parse_args(argv)
    inputs = args.inputs or default_inputs()
    differ = 0
    for target in inputs:
        for output in args.formats.split(","):
            for workers in args.workers.split(","):
                mine = report(REPO / "src", target, output, workers)
                theirs = report(args.baseline, target, output, workers)
                same = mine == theirs
                differ += not same
                print(
                    f"{'same' if same else 'DIFFER'}  exit {mine[0]}  {output:4} workers={workers}"
                    f"  {len(mine[1]):8} bytes  {target}",
                    flush=True,
                )
    print(f"{len(inputs)} inputs, {differ} differing outputs")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
