"""A CPU-only job's peak: measured once per machine, on an idle machine, and cached.

A CPU has no datasheet peak a job could reach, so `agent/cpu_peak.py` measures one with the job's
own torch (a large fp32 matmul and a large copy), in a subprocess of the job's Python: torchtop's
process never imports torch. The answer is kept in `cpu_peak.json` in torchtop's cache folder
(`$TORCHTOP_CACHE_DIR`, else `$XDG_CACHE_HOME/torchtop`, else `~/.cache/torchtop`), keyed by
the CPU model, the logical core count and the torch version, so a second call reads it in
milliseconds and a new torch or another machine measures anew.

A measurement shared with other work measures the other work too: the peak is measured only when
the other processes together use at most `BUSY_CORES` cores, both in a short look before it and
over the measurement itself; otherwise there is no peak, with the reason. Call it before the job
starts (never while the job runs: the job's own processes count as others, so it would refuse);
`measure=False` only reads the cache.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped, unused-ignore]

from torchtop.model.peak import MEASURED, Peak

BUSY_CORES = 0.3
"""Other processes' CPU, in cores, above which the machine is not idle enough to measure."""
LOOK_S = 0.5
"""How long the look before measuring watches the other processes."""
MEASURE_TIMEOUT_S = 300.0
"""torch's import alone can take tens of seconds on a cold, loaded machine."""
CACHE_NAME = "cpu_peak.json"
SCRIPT = Path(__file__).resolve().parents[1] / "agent" / "cpu_peak.py"
THREAD_LIMITS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Cleared for the measurement: the machine's peak, not a job's thread limit."""
_TORCH_VERSION = "import importlib.metadata as m; print(m.version('torch'))"

ProcessKey = tuple[int, float]


@dataclass(frozen=True)
class CpuPeakReading:
    """The CPU's peak, or why there is none."""

    peak: Peak | None
    reason: str | None = None
    """Why `peak` is None: the machine was busy, torch is missing, the measurement failed."""
    fresh: bool = False
    """Measured by this call (False: read from the cache, or nothing measured)."""


def cpu_peak(
    python: str = sys.executable, cache_dir: Path | None = None, *, measure: bool = True
) -> CpuPeakReading:
    """This machine's CPU peak for the torch of `python`: cached, else measured if the machine
    is idle and `measure` allows, else None with the reason."""
    version = torch_version(python)
    if version is None:
        return CpuPeakReading(None, f"torch is not installed for {python}")
    key = cache_key(version)
    path = (cache_dir or default_cache_dir()) / CACHE_NAME
    known = read_cache(path).get(key)
    if isinstance(known, dict):
        return CpuPeakReading(_peak(key, known))
    if not measure:
        return CpuPeakReading(None, "the CPU's peak was not measured on this machine yet")
    before = cpu_seconds()
    time.sleep(LOOK_S)
    looked = cpu_seconds()
    busy = others_cores(before, looked, LOOK_S)
    if busy > BUSY_CORES:
        return CpuPeakReading(None, _busy_reason(busy, "before measuring"))
    started = time.monotonic()
    record = run_benchmark(python)
    if isinstance(record, str):
        return CpuPeakReading(None, record)
    busy = others_cores(looked, cpu_seconds(), time.monotonic() - started)
    if busy > BUSY_CORES:
        return CpuPeakReading(None, _busy_reason(busy, "while measuring"))
    record["measured_at"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    write_cache(path, key, record)
    return CpuPeakReading(_peak(key, record), fresh=True)


def _busy_reason(cores: float, when: str) -> str:
    return (
        f"the CPU's peak was not measured: other processes used {cores:.1f} cores {when} "
        f"(more than {BUSY_CORES}); it is measured only on an idle machine"
    )


def _peak(key: str, record: dict[str, object]) -> Peak:
    size = int(str(record.get("matmul_n", 0)))
    mib = int(str(record.get("copy_bytes", 0))) // (1024 * 1024)
    note = (
        f"torch.matmul {size}x{size} fp32 and a {mib} MiB copy on {record.get('threads')} "
        f"threads, measured {record.get('measured_at')}; cache key {key}"
    )
    tflops = {"fp32": float(str(record["fp32_tflops"]))}
    return Peak(cpu_model(), tflops, float(str(record["tb_s"])), MEASURED, note)


def cache_key(version: str) -> str:
    """What a measured peak holds for: this CPU model, this many logical cores, this torch."""
    return f"{cpu_model()} | {os.cpu_count()} logical cores | torch {version}"


def cpu_model() -> str:
    """The CPU's marketing name (/proc/cpuinfo's `model name`), else what platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def torch_version(python: str) -> str | None:
    """The torch version `python` would import, without importing it; None without torch."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        try:
            return importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            return None
    try:
        done = subprocess.run(
            [python, "-c", _TORCH_VERSION], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def run_benchmark(python: str) -> dict[str, object] | str:
    """`agent/cpu_peak.py`'s figures, or a one-line reason it gave none."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_LIMITS}
    try:
        done = subprocess.run(
            [python, str(SCRIPT)],
            capture_output=True,
            text=True,
            timeout=MEASURE_TIMEOUT_S,
            env=env,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the CPU's peak could not be measured: {exc}"
    lines = done.stdout.strip().splitlines()
    try:
        record = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except json.JSONDecodeError:
        record = None
    if not isinstance(record, dict) or not _positive(record, "fp32_tflops", "tb_s"):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"the CPU's peak could not be measured (exit {done.returncode}): {last}"
    return record


def _positive(record: dict[str, object], *keys: str) -> bool:
    return all(isinstance(record.get(k), float | int) and float(str(record[k])) > 0 for k in keys)


def cpu_seconds() -> dict[ProcessKey, float]:
    """Every process's CPU seconds so far (user + system), by pid and start time."""
    seen: dict[ProcessKey, float] = {}
    for process in psutil.process_iter(["cpu_times", "create_time"]):
        times, started = process.info.get("cpu_times"), process.info.get("create_time")
        if times is not None and started is not None:
            seen[(int(process.pid), float(started))] = float(times.user + times.system)
    return seen


def others_cores(
    before: dict[ProcessKey, float], after: dict[ProcessKey, float], elapsed_s: float
) -> float:
    """Cores the processes other than this one used between two `cpu_seconds` readings (a
    process seen in only one of them is not counted: it started or ended between)."""
    me = os.getpid()
    used = sum(
        max(0.0, seconds - before[key])
        for key, seconds in after.items()
        if key in before and key[0] != me
    )
    return used / max(elapsed_s, 1e-6)


def default_cache_dir() -> Path:
    """`$TORCHTOP_CACHE_DIR`, else `$XDG_CACHE_HOME/torchtop`, else `~/.cache/torchtop`."""
    chosen = os.environ.get("TORCHTOP_CACHE_DIR")
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(chosen) if chosen else Path(cache_home) / "torchtop"


def read_cache(path: Path) -> dict[str, object]:
    """The cached peaks by key; a missing or unreadable file is an empty cache."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = stored.get("entries") if isinstance(stored, dict) else None
    return entries if isinstance(entries, dict) else {}


def write_cache(path: Path, key: str, record: Mapping[str, object]) -> None:
    """Add `record` under `key`, written whole then renamed, so a reader never sees half a
    file; a cache folder that cannot be written is left alone (the next run measures again)."""
    entries = read_cache(path)
    entries[key] = dict(record)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(json.dumps({"entries": entries}, indent=1), encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        pass
