"""When `run` gets the CPU's peak: read from the cache before the job starts, measured after.

A CPU-only job's MFU needs this machine's peak (`collectors/cpu_peak.py`), and a peak measured
while the job runs would measure the job too, and slow it. So before the job starts the launcher
only reads the cache, giving it at most `WAIT_S` (the job's interpreter may be another Python,
asked for its torch version); the job never waits longer for it. Where nothing is cached and
the job turned out to be CPU-only, a detached process measures the peak after torchtop is done
(the collector itself refuses unless the machine is idle then), so the next run has it.
`TORCHTOP_CPU_PEAK=0` turns both off.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

from torchtop.analysis.efficiency import CPU_DEVICE
from torchtop.collectors.cpu_peak import CpuPeakReading, cpu_peak
from torchtop.model.efficiency import Efficiency
from torchtop.model.peak import Peak

WAIT_S = 2.0
"""The longest the job's start waits for the cached peak."""
SWITCH = "TORCHTOP_CPU_PEAK"
_MEASURE = "import sys; from torchtop.collectors.cpu_peak import cpu_peak; cpu_peak(sys.argv[1])"


def job_python(command: Sequence[str]) -> str:
    """The interpreter the job runs: its command's first word where that is a Python, else the
    one running torchtop (a launcher such as torchrun runs it)."""
    first = command[0] if command else ""
    if os.path.basename(first).startswith("python"):
        return shutil.which(first) or first
    return sys.executable


def cached_peak(
    command: Sequence[str], environ: Mapping[str, str] = os.environ, wait_s: float = WAIT_S
) -> Peak | None:
    """The cached peak for the job's torch on this machine, if one is found within `wait_s`."""
    if environ.get(SWITCH) == "0":
        return None
    found: list[CpuPeakReading] = []
    python = job_python(command)
    reader = threading.Thread(
        target=lambda: found.append(cpu_peak(python, measure=False)), daemon=True
    )
    reader.start()
    reader.join(wait_s)
    return found[0].peak if found else None


def measure_after(
    efficiency: Efficiency | None, command: Sequence[str], environ: Mapping[str, str] = os.environ
) -> bool:
    """Start measuring the peak for the next run where the job's efficiency (its report's) is a
    CPU-only job's with no peak; whether a measurement was started."""
    if environ.get(SWITCH) == "0" or efficiency is None:
        return False
    if efficiency.device != CPU_DEVICE or efficiency.peak is not None:
        return False
    subprocess.Popen(
        [sys.executable, "-c", _MEASURE, job_python(command)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return True
