"""Time torchtop against its peers at analysing a Kineto trace, in one run.

What it measures: for each trace (the real 35 MB ResNet-50 ``num_workers=0``
tb-plugin sample, and a >= 1 GB trace built from its steps by
``benchmarks/make_big_trace.py``) and each tool, the end-to-end wall time of
a fresh process that loads the trace and produces the tool's headline
analysis, and that process's peak resident memory:

* ``torchtop``   -- ``torchtop analyze PATH --format json`` (the CLI, as a user runs it);
* ``hta``        -- HolisticTraceAnalysis: ``TraceAnalysis(trace_dir=DIR)`` then
  ``get_temporal_breakdown(visualize=False)``; HTA only takes a directory, so the
  trace is symlinked into a scratch folder as ``rank-0.json[.gz]`` (HTA accepts
  any ``*.json``/``*.gz`` there; with no ``distributedInfo.rank`` in the trace it
  scans the file for one, warns and uses rank 0);
* ``tbprofiler`` -- torch-tb-profiler 0.4.3 the way its loader handles one worker
  file: ``RunProfileData.parse`` (read + ``json.loads`` + event objects +
  ``process()`` + ``analyze()``), then ``RunGenerator.generate_run_profile()``
  (overview, operator/kernel/memory/module views).

Why this way: all three are timed as separate child processes on the same
machine in the same run, so interpreter start-up and imports count for
everyone (each package byte-compiled, as pip leaves an installed one: torchtop's
checkout is compiled first), the file is in the page cache for everyone (it is read once before
each trace's timings), and a peer that blows up cannot take the harness with
it. The runs go in rounds, every tool once per round (the first one rotating), so the host's
drift in speed (a third within minutes on the shared 2-core machine) falls on all of them
alike; the ratio is also printed round by round. Each child gets a wall-clock timeout and an
address-space cap (``RLIMIT_AS``), so a blow-up is recorded as ``timed out`` / ``out of memory``
rather than hanging or swapping the machine.

Peak memory is ``ru_maxrss`` of the child from ``os.wait4`` (per-child, and on
Linux the max over it and any descendants it reaped), combined with a sampled
sum of RSS over the live process tree (every 0.1 s) so that concurrent worker
processes are not under-counted; the larger of the two is reported.
``getrusage(RUSAGE_CHILDREN)`` is not used: it only keeps the largest child
ever, so deltas between runs are meaningless.

The peers' in-process stage timings (import, parse, analyse ...) are printed
to stdout by the child scripts and kept in the JSON as ``detail``.

Usage::

    python benchmarks/analyze_speed.py [--skip-big] [--tools torchtop,hta,tbprofiler]
        [--small PATH] [--big PATH] [--repeat 3] [--repeat-big 1]
        [--timeout 1800] [--max-mem-gb 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "benchmarks" / "out"
DEFAULT_SMALL = Path(
    "/work/shared/traces/kineto-tb-plugin/resnet50_num_workers_0/"
    "worker0.1623143089861.pt.trace.json.gz"
)
DEFAULT_BIG = OUT_DIR / "big_trace.json"
DEFAULT_PEERS_PYTHON = Path("/work/peers/bin/python")
ALL_TOOLS = ("torchtop", "hta", "tbprofiler")
SAMPLE_EVERY_S = 0.1
MIB = 1024 * 1024

HTA_SCRIPT = """
import json, sys, time
clock = time.perf_counter
t0 = clock()
from hta.trace_analysis import TraceAnalysis
t1 = clock()
ta = TraceAnalysis(trace_dir=sys.argv[1])
t2 = clock()
df = ta.get_temporal_breakdown(visualize=False)
t3 = clock()
stages = {"import": t1 - t0, "load_traces": t2 - t1, "temporal_breakdown": t3 - t2}
print(json.dumps({"stages": stages, "result": json.loads(df.to_json(orient="records"))}))
"""

TBPROFILER_SCRIPT = """
import json, sys, time
clock = time.perf_counter
t0 = clock()
from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.run_generator import RunGenerator
stages = {"import": clock() - t0}
def stage(name, fn):
    start = clock()
    value = fn()
    stages[name] = clock() - start
    return value
# RunProfileData.parse(worker, span, path, cache_dir), unrolled to time its parts.
path, cache_dir = sys.argv[1], sys.argv[2]
preprocess = RunProfileData._preprocess_file
trace_path, trace_json = stage("read_json", lambda: preprocess(path, cache_dir))
profile = stage("build_events", lambda: RunProfileData("worker0", None, trace_json))
profile.trace_file_path = trace_path
stage("process", profile.process)
stage("analyze", profile.analyze)
extra = {"steps": len(profile.steps_names or []), "recommendations": profile.recommendations}
try:
    generator = RunGenerator("worker0", None, profile)
    stage("generate_run_profile", generator.generate_run_profile)
except Exception as exc:
    extra["generate_run_profile_error"] = f"{type(exc).__name__}: {exc}"[:300]
print(json.dumps({"stages": stages, **extra}))
"""

OOM_MARKERS = (
    "MemoryError",
    "Unable to allocate",
    "bad_alloc",
    "Cannot allocate memory",
    "out of memory",
)
EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*")


# ---------------------------------------------------------------- child runs


@dataclass
class ChildRun:
    """One finished (or killed) child process."""

    status: str  # "ok" | "failed" | "out of memory" | "timed out"
    wall_s: float
    peak_kib: int
    stdout: str
    reason: str = ""


def cap_address_space(limit_bytes: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return apply


def child_pids(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids.extend(int(k) for k in fh.read().split())
    except OSError:
        pass
    return kids


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kib(root: int) -> int:
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss_kib(pid)
        todo.extend(child_pids(pid))
    return total


def read_back(fh: IO[bytes]) -> str:
    fh.seek(0)
    return fh.read().decode("utf-8", errors="replace")


def failure_reason(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for line in reversed(lines):
        if EXC_LINE.match(line):
            return line[:300]
    return lines[-1][:300] if lines else "no output on stderr"


def classify(returncode: int, timed_out: bool, stderr: str, timeout_s: float) -> tuple[str, str]:
    if timed_out:
        return "timed out", f"killed after {timeout_s:.0f} s"
    if returncode == 0:
        return "ok", ""
    reason = failure_reason(stderr)
    if returncode == -signal.SIGKILL:
        return "out of memory", "killed by SIGKILL (kernel OOM killer?)"
    if any(marker in stderr for marker in OOM_MARKERS):
        return "out of memory", reason
    return "failed", f"exit {returncode}: {reason}"


def wait_with_limits(pid: int, timeout_s: float) -> tuple[int, int, int, bool]:
    """Reap ``pid``; returns (wait status, wait4 maxrss KiB, sampled tree peak KiB, timed out).

    The reaping is a blocking ``wait4``, so the caller's clock stops when the child exits, not
    at the next sample: polling would round every run up to the sampling period, which inflates
    a sub-second tool's time by up to 15%. A side thread samples the tree's memory and kills
    the child at the deadline.
    """
    stop = threading.Event()
    tree_peak = [0]
    timed_out = [False]

    def watch() -> None:
        deadline = time.monotonic() + timeout_s
        while not stop.wait(SAMPLE_EVERY_S):
            tree_peak[0] = max(tree_peak[0], tree_rss_kib(pid))
            if not timed_out[0] and time.monotonic() > deadline:
                timed_out[0] = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, status, usage = os.wait4(pid, 0)
    stop.set()
    watcher.join()
    return status, usage.ru_maxrss, tree_peak[0], timed_out[0]


def run_child(argv: list[str], timeout_s: float, max_mem_bytes: int, cwd: Path) -> ChildRun:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=err,
            cwd=cwd,
            preexec_fn=cap_address_space(max_mem_bytes),
            start_new_session=True,
        )
        status, maxrss, tree_peak, timed_out = wait_with_limits(proc.pid, timeout_s)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout, stderr = read_back(out), read_back(err)
    verdict, reason = classify(proc.returncode, timed_out, stderr, timeout_s)
    return ChildRun(verdict, wall, max(maxrss, tree_peak), stdout, reason)


# ---------------------------------------------------------------- the tools


@dataclass(frozen=True)
class Settings:
    torchtop: Path
    peers_python: Path
    timeout_s: float
    max_mem_bytes: int
    scratch: Path


def torchtop_argv(trace: Path, settings: Settings) -> list[str]:
    return [str(settings.torchtop), "analyze", str(trace), "--format", "json"]


def hta_trace_dir(trace: Path, scratch: Path) -> Path:
    folder = scratch / f"hta-{trace.stem}-{abs(hash(str(trace))) % 10**8}"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / ("rank-0.json.gz" if trace.name.endswith(".gz") else "rank-0.json")
    if not link.is_symlink():
        link.symlink_to(trace.resolve())
    return folder


def hta_argv(trace: Path, settings: Settings) -> list[str]:
    return [
        str(settings.peers_python),
        "-c",
        HTA_SCRIPT,
        str(hta_trace_dir(trace, settings.scratch)),
    ]


def tbprofiler_argv(trace: Path, settings: Settings) -> list[str]:
    cache = settings.scratch / "tb-cache"
    cache.mkdir(parents=True, exist_ok=True)
    return [str(settings.peers_python), "-c", TBPROFILER_SCRIPT, str(trace.resolve()), str(cache)]


ARGV_BUILDERS: dict[str, Callable[[Path, Settings], list[str]]] = {
    "torchtop": torchtop_argv,
    "hta": hta_argv,
    "tbprofiler": tbprofiler_argv,
}


def read_detail(tool: str, stdout: str) -> tuple[dict[str, Any], str]:
    """What the child printed, and an error if it is not what the tool should print."""
    text = stdout.strip()
    if tool != "torchtop":
        text = text.splitlines()[-1] if text else ""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"stdout is not JSON ({exc.msg} at char {exc.pos}): {text[:120]!r}"
    if not isinstance(parsed, dict):
        return {}, f"stdout JSON is a {type(parsed).__name__}, not an object"
    if tool == "torchtop":
        return {"report_bytes": len(stdout), "report_keys": sorted(parsed)[:20]}, ""
    return parsed, ""


# ---------------------------------------------------------------- measuring


@dataclass
class Measurement:
    trace: str
    tool: str
    status: str
    runs_s: list[float] = field(default_factory=list)
    wall_s: float | None = None
    peak_mib: float | None = None
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    speedup: float | None = None  # tool wall / torchtop wall on the same trace
    round_speedups: list[float] = field(default_factory=list)  # the same, round by round


def run_once(tool: str, trace: Path, settings: Settings, result: Measurement) -> bool:
    """One timed run of `tool`, added to `result`; False once the tool has failed."""
    argv = ARGV_BUILDERS[tool](trace, settings)
    run = run_child(argv, settings.timeout_s, settings.max_mem_bytes, settings.scratch)
    result.peak_mib = max(result.peak_mib or 0.0, run.peak_kib / 1024)
    if run.status == "ok":
        result.detail, problem = read_detail(tool, run.stdout)
        if problem:
            run.status, run.reason = "failed", problem
    if run.status != "ok":
        result.status, result.reason = run.status, run.reason
        result.detail["failed_after_s"] = round(run.wall_s, 2)
        return False
    result.runs_s.append(run.wall_s)
    return True


def measure(
    tools: list[str], trace_label: str, trace: Path, repeat: int, settings: Settings
) -> list[Measurement]:
    """`repeat` rounds, each running every tool once, the first tool of each round rotating.

    The host's speed drifts by a third within minutes; timing every tool in every round (rather
    than all runs of one tool, then the next) spreads that drift over all of them, and the
    round-by-round ratios show how far it moved the comparison."""
    results = {tool: Measurement(trace_label, tool, "ok") for tool in tools}
    load_before = os.getloadavg()[0]
    for round_index in range(repeat):
        shift = round_index % len(tools)
        for tool in tools[shift:] + tools[:shift]:
            m = results[tool]
            if m.status != "ok":
                continue
            where = f"[{trace_label}] round {round_index + 1}/{repeat} {tool}"
            print(f"{where} ...", end=" ", flush=True)
            ok = run_once(tool, trace, settings, m)
            print(f"{m.runs_s[-1]:.2f} s" if ok else f"{m.status} ({m.reason})", flush=True)
    load_after = os.getloadavg()[0]
    for m in results.values():
        # Other work on the machine skews wall times; keep the evidence next to them.
        m.detail["loadavg_1min_before_after"] = [round(load_before, 2), round(load_after, 2)]
        if m.status == "ok":
            m.wall_s = statistics.median(m.runs_s)
    return list(results.values())


def warm_page_cache(path: Path) -> None:
    with open(path, "rb", buffering=0) as fh:
        while fh.read(16 * MIB):
            pass


def add_speedups(results: list[Measurement]) -> None:
    """Each peer's median wall time over torchtop's, and the same ratio round by round."""
    base = {m.trace: m for m in results if m.tool == "torchtop" and m.wall_s}
    for m in results:
        own = base.get(m.trace)
        if m.wall_s and own is not None and own.wall_s:
            m.speedup = m.wall_s / own.wall_s
            if m.tool != "torchtop":
                m.round_speedups = [p / t for p, t in zip(m.runs_s, own.runs_s, strict=False)]


# ---------------------------------------------------------------- reporting


def machine_info() -> dict[str, Any]:
    model = "unknown"
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as fh:
        mem_kib = int(next(ln for ln in fh if ln.startswith("MemTotal:")).split()[1])
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "ram_gib": round(mem_kib / 1024 / 1024, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def peer_versions(peers_python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json;"
        "names = ('HolisticTraceAnalysis', 'torch-tb-profiler', 'pandas');"
        "print(json.dumps({p: m.version(p) for p in names}))"
    )
    try:
        out = subprocess.run(
            [str(peers_python), "-c", code], capture_output=True, text=True, timeout=60
        )
        versions: dict[str, str] = json.loads(out.stdout)
        return versions
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def byte_compile_torchtop(torchtop: Path) -> str:
    """Compile torchtop's modules to `__pycache__`, as `pip install` does for an installed
    package (the peers' packages were byte-compiled when pip installed them). A development
    checkout installed with `pip install -e` under PYTHONDONTWRITEBYTECODE=1 (this machine's
    environment) has no `.pyc` files, so every run would compile the package from source
    first: about 60 ms that no installed copy pays. Returns the package folder."""
    python = torchtop.parent / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    folder = subprocess.run(
        [str(python), "-c", "import os, torchtop; print(os.path.dirname(torchtop.__file__))"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    subprocess.run([str(python), "-m", "compileall", "-q", folder], check=True, env=env)
    return folder


def torchtop_version(torchtop: Path) -> str:
    python = torchtop.parent / "python"
    code = "import importlib.metadata as m; print(m.version('torchtop'))"
    try:
        return subprocess.run(
            [str(python), "-c", code], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except OSError:
        return "unknown"


def trace_info(path: Path) -> dict[str, Any]:
    info: dict[str, Any] = {"path": str(path), "bytes_on_disk": path.stat().st_size}
    if path.name.endswith(".gz"):
        with open(path, "rb") as fh:
            fh.seek(-4, os.SEEK_END)
            info["bytes_uncompressed_mod_4gib"] = int.from_bytes(fh.read(4), "little")
    return info


def format_row(m: Measurement) -> str:
    wall = f"{m.wall_s:9.2f}" if m.wall_s is not None else f"{m.status:>9}"
    peak = f"{m.peak_mib:9.0f}" if m.peak_mib is not None else f"{'-':>9}"
    if m.tool == "torchtop":
        speed = "(baseline)" if m.wall_s else "-"
    else:
        speed = f"{m.speedup:.1f}x" if m.speedup else "-"
    runs = ",".join(f"{r:.2f}" for r in m.runs_s) or "-"
    return f"{m.trace:<6} {m.tool:<11} {wall} {peak} {speed:>12}   {runs}"


def print_table(results: list[Measurement]) -> None:
    print()
    print("speedup = that tool's median wall time / torchtop's, on the same trace")
    print(f"{'trace':<6} {'tool':<11} {'wall s':>9} {'peak MiB':>9} {'speedup':>12}   runs s")
    for m in results:
        print(format_row(m))
    for m in results:
        if m.round_speedups:
            ratios = sorted(m.round_speedups)
            print(
                f"  {m.trace}/{m.tool}: speedup round by round {statistics.median(ratios):.1f}x "
                f"median, {ratios[0]:.1f}x-{ratios[-1]:.1f}x "
                f"({sum(r >= 8 for r in ratios)} of {len(ratios)} rounds at 8x or more)"
            )
    for m in results:
        if m.reason:
            print(f"  {m.trace}/{m.tool}: {m.status}: {m.reason}")


def write_json(path: Path, header: dict[str, Any], results: list[Measurement]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**header, "results": [asdict(m) for m in results]}
    path.write_text(json.dumps(payload, indent=2) + "\n")


# ---------------------------------------------------------------- driver


def ensure_big_trace(path: Path) -> dict[str, Any]:
    if path.exists():
        return {"generated": False}
    print(f"generating {path} with make_big_trace.py ...", flush=True)
    argv = [sys.executable, str(REPO / "benchmarks" / "make_big_trace.py"), "--out", str(path)]
    if path.name.endswith(".gz"):
        argv.append("--gzip")
    started = time.perf_counter()
    subprocess.run(argv, check=True)
    return {"generated": True, "make_big_trace_s": round(time.perf_counter() - started, 1)}


def default_torchtop() -> Path:
    local = REPO / ".venv" / "bin" / "torchtop"
    found = shutil.which("torchtop")
    return local if local.exists() or not found else Path(found)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=Path, default=DEFAULT_SMALL, help="the real 35 MB trace")
    ap.add_argument(
        "--big", type=Path, default=DEFAULT_BIG, help="the >= 1 GB trace (generated if missing)"
    )
    ap.add_argument("--skip-big", action="store_true", help="time only the small trace")
    ap.add_argument(
        "--tools",
        default=",".join(ALL_TOOLS),
        help="comma-separated subset of " + ",".join(ALL_TOOLS),
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="runs per tool on the small trace (median reported)"
    )
    ap.add_argument("--repeat-big", type=int, default=1, help="runs per tool on the big trace")
    ap.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds before a child is killed"
    )
    ap.add_argument(
        "--max-mem-gb",
        type=float,
        default=20.0,
        help="address-space cap per child (RLIMIT_AS), GiB",
    )
    ap.add_argument("--torchtop", type=Path, default=default_torchtop(), help="torchtop executable")
    ap.add_argument(
        "--peers-python",
        type=Path,
        default=DEFAULT_PEERS_PYTHON,
        help="python with hta and torch_tb_profiler",
    )
    ap.add_argument("--json-out", type=Path, default=OUT_DIR / "analyze_speed.json")
    args = ap.parse_args(argv)
    unknown = set(args.tools.split(",")) - set(ALL_TOOLS)
    if unknown:
        ap.error(f"unknown tools: {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tools = [t for t in ALL_TOOLS if t in args.tools.split(",")]
    machine = machine_info()
    print(
        f"machine: {machine['cpu']}, {machine['cores']} cores, {machine['ram_gib']} GiB RAM, "
        f"Linux {machine['kernel']}, Python {machine['python']}"
    )
    header: dict[str, Any] = {
        "machine": machine,
        "versions": {
            "torchtop": torchtop_version(args.torchtop),
            **peer_versions(args.peers_python),
        },
        "settings": {
            "timeout_s": args.timeout,
            "max_mem_gib": args.max_mem_gb,
            "repeat_small": args.repeat,
            "repeat_big": args.repeat_big,
            "tools": tools,
        },
        "traces": {},
    }
    print(f"versions: {header['versions']}")
    if "torchtop" in tools:
        header["torchtop_byte_compiled"] = byte_compile_torchtop(args.torchtop)
    plan: list[tuple[str, Path, int]] = [("small", args.small, args.repeat)]
    if not args.skip_big:
        header["big_trace_generation"] = ensure_big_trace(args.big)
        plan.append(("big", args.big, args.repeat_big))
    results: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="analyze_speed-") as scratch:
        settings = Settings(
            args.torchtop,
            args.peers_python,
            args.timeout,
            int(args.max_mem_gb * 2**30),
            Path(scratch),
        )
        for label, trace, repeat in plan:
            header["traces"][label] = trace_info(trace)
            warm_page_cache(trace)
            results += measure(tools, label, trace, repeat, settings)
            add_speedups(results)
            write_json(args.json_out, header, results)
    print_table(results)
    print(f"\nwrote {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
