"""torchtop's GPU acceptance kit: planted CUDA jobs with known truths, checked against outside
truth (the jobs' own clocks, nvidia-smi), end to end in one call of at most eight minutes.

    python benchmarks/gpu/run_kit.py [--out DIR] [--budget-s 450] [--only STEPS] [--dry-run]

On a machine without CUDA it says so in one line and exits 0; `--dry-run` (or `--device cpu`)
runs every step on the CPU through the same code, for a few seconds each. Writes
`kit-results.json`, `kit-summary.md` and `kit-bundle.tar.gz` (the step folders) under `--out`
(default: `$OUT`, else benchmarks/out/gpu-kit). Steps run in order of value (kit_plan.py); each
has a time box, a failed one is recorded and the kit goes on, and a step that no longer fits
the kit's deadline is skipped and named.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kit_bundle import bundle
from kit_judge import judge
from kit_plan import Step, selected
from kit_steps import REPO, Kit, StepResult, bare_step, run_step, tune_step
from kit_summary import markdown, results_document
from kit_watch import attach_step, dashboard_step
from smi import SmiSampler

RUNNERS: dict[str, Callable[[Kit, Step, float], StepResult]] = {
    "run": run_step,
    "bare": bare_step,
    "tune": tune_step,
    "attach": attach_step,
    "dashboard": dashboard_step,
}
OVERHEAD_S = {False: 20.0, True: 10.0}
"""Per step beyond its watched seconds, on a GPU (False) and on the dry run (True)."""
SHORTEST_SHARE = 0.5
"""A step is shortened to fit the deadline down to this share of its seconds, else skipped."""
PROBE = (
    "import json, torch; c = torch.cuda.is_available(); "
    "print(json.dumps({'cuda_available': c, 'torch': torch.__version__, "
    "'cuda': torch.version.cuda, 'device': torch.cuda.get_device_name(0) if c else None, "
    "'capability': list(torch.cuda.get_device_capability(0)) if c else None}))"
)


def probe(python: str) -> dict[str, Any]:
    """torch's view of the machine, from a child process (the kit itself holds no CUDA)."""
    done = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {"cuda_available": False, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    loaded: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def has_driver() -> bool:
    """An NVIDIA driver is installed (without one, CUDA cannot be: torch is not imported)."""
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidiactl").exists()


def driver() -> str | None:
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,memory.total",
                               "--format=csv,noheader", "--id=0"],
                              capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def machine(found: dict[str, Any], dry: bool, budget_s: float) -> dict[str, Any]:
    from torchtop import __version__

    return {
        **found,
        "mode": "dry run on the CPU" if dry else "GPU",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "driver": None if dry else driver(),
        "torchtop": __version__,
        "python": sys.version.split()[0],
        "budget_s": budget_s,
    }


def fit(step: Step, dry: bool, left_s: float) -> float | None:
    """The seconds the step gets within `left_s`: its own, shortened, or None (skip)."""
    wanted = step.dry_seconds if dry else step.seconds
    room = left_s - OVERHEAD_S[dry]
    if room >= wanted:
        return wanted
    return room if room >= wanted * SHORTEST_SHARE else None


def run_steps(
    kit: Kit,
    steps: tuple[Step, ...],
    deadline: float,
    after: Callable[[dict[str, StepResult]], None],
) -> dict[str, StepResult]:
    """Each step in turn (`after` each one: the results so far are saved)."""
    results: dict[str, StepResult] = {}
    for step in steps:
        seconds = fit(step, kit.dry, deadline - time.monotonic())
        if seconds is None:
            results[step.key] = StepResult(step.key, status="skipped (the kit's deadline)")
            print(f"kit: {step.key} skipped: it no longer fits the deadline", flush=True)
            continue
        print(f"kit: {step.key} for {seconds:.0f} s", flush=True)
        try:
            result = RUNNERS[step.kind](kit, step, seconds)
        except Exception as error:  # a step never stops the kit
            result = StepResult(step.key, status=f"error ({type(error).__name__}: {error})")
        results[step.key] = result
        print(f"kit: {step.key}: {result.status} in {result.seconds or 0:.0f} s", flush=True)
        after(results)
    return results


def save(out: Path, about: dict[str, Any], started: float, results: dict[str, StepResult],
         sampler: SmiSampler | None, dry: bool) -> str:  # fmt: skip
    """kit-results.json and kit-summary.md for the steps so far; the summary's text."""
    readings = list(sampler.readings) if sampler is not None else []
    checks = judge(results, readings, dry)
    about = {**about, "wall_s": time.monotonic() - started}
    smi = {"readings": len(readings), "error": sampler.error if sampler else "dry run"}
    document = results_document(about, list(results.values()), checks, smi)
    summary = markdown(document)
    (out / "kit-results.json").write_text(json.dumps(document, indent=2) + "\n")
    (out / "kit-summary.md").write_text(summary)
    return summary


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = os.environ.get("OUT") or str(REPO / "benchmarks" / "out" / "gpu-kit")
    parser.add_argument("--out", type=Path, default=Path(default_out))
    parser.add_argument("--budget-s", type=float, default=450.0, help="the kit's deadline")
    parser.add_argument("--only", help="comma-separated steps (run:fp32-matmul) or kinds (attach)")
    parser.add_argument("--dry-run", action="store_true", help="every step on the CPU, briefly")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    dry = args.dry_run or args.device == "cpu"
    started = time.monotonic()
    try:
        steps = selected(args.only)
    except ValueError as error:
        print(f"run_kit: {error}", file=sys.stderr)
        return 2
    found = probe(sys.executable) if dry or has_driver() else {}
    if not dry and not found.get("cuda_available"):
        why = found.get("error") or (
            f"torch {found['torch']} sees no CUDA device" if found else "no NVIDIA driver"
        )
        print(f"no CUDA here ({why}): nothing to measure; --dry-run runs the kit on the CPU")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    about = machine(found, dry, args.budget_s)
    with tempfile.TemporaryDirectory(prefix="gpu-kit-") as folder:
        work = Path(folder) / "kit"
        deadline = started + args.budget_s
        kit = Kit(work, dry, deadline=deadline)
        sampler = None if dry else SmiSampler().start()

        def after(results: dict[str, StepResult]) -> None:
            save(args.out, about, started, results, sampler, dry)

        results = run_steps(kit, steps, deadline, after)
        if sampler is not None:
            sampler.stop()
        summary = save(args.out, about, started, results, sampler, dry)
        readings = sampler.readings if sampler is not None else []
        work.mkdir(parents=True, exist_ok=True)
        (work / "nvidia-smi.txt").write_text(
            "".join(f"{r.t:.3f} {r.utilization_pct} {r.memory_used_mib}\n" for r in readings)
        )
        packed = bundle(work, args.out / "kit-bundle.tar.gz")
    print(summary)
    print(f"kit: wrote {args.out} (bundle: {packed['files']} files, {packed['bytes']} bytes, "
          f"{packed['skipped']} left out) in {time.monotonic() - started:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
