"""nvidia-smi, sampled on its own beside torchtop's NVML samples: the outside truth for them.

`nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits -lms 500`
prints one line per device every 500 ms (`87, 40321`: percent and MiB); a reader thread stamps
each line with the wall clock as it arrives. `window_means` averages either source over the same
seconds, so the two are compared on equal terms.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

QUERY = [
    "nvidia-smi",
    "--query-gpu=utilization.gpu,memory.used",
    "--format=csv,noheader,nounits",
    "-lms",
    "500",
]
MIB = 2**20


@dataclass(frozen=True)
class Reading:
    """One device reading at wall time `t` (seconds since the epoch); None: not given."""

    t: float
    utilization_pct: float | None
    memory_used_mib: float | None


def parse_line(line: str, t: float) -> Reading | None:
    """`87, 40321` -> Reading; `[N/A]` fields are None; a line of another shape is None."""
    fields = [field.strip() for field in line.strip().split(",")]
    if len(fields) != 2:
        return None
    utilization, memory = (_number(field) for field in fields)
    if utilization is None and memory is None and not all(f.startswith("[") for f in fields):
        return None
    return Reading(t, utilization, memory)


def _number(field: str) -> float | None:
    try:
        return float(field)
    except ValueError:
        return None


def parse_output(text: str, start_t: float, every_s: float = 0.5) -> list[Reading]:
    """A recorded run of the query (one device), stamped `every_s` apart from `start_t`."""
    readings: list[Reading] = []
    for line in text.splitlines():
        reading = parse_line(line, start_t + len(readings) * every_s)
        if reading is not None:
            readings.append(reading)
    return readings


def window_means(
    readings: Iterable[Reading], start_t: float, end_t: float
) -> tuple[float | None, float | None, int]:
    """Mean utilisation (%) and memory (MiB) of the readings in [start_t, end_t], and how many."""
    inside = [r for r in readings if start_t <= r.t <= end_t]
    utilization = _mean(r.utilization_pct for r in inside)
    return utilization, _mean(r.memory_used_mib for r in inside), len(inside)


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


class SmiSampler:
    """`nvidia-smi -lms 500` on device 0 in the background, for the kit's whole run."""

    def __init__(self, command: Sequence[str] = (*QUERY, "--id=0")) -> None:
        self.readings: list[Reading] = []
        self.error: str | None = None
        self._process: subprocess.Popen[str] | None = None
        self._command = list(command)
        self._thread = threading.Thread(target=self._read, name="kit-nvidia-smi", daemon=True)

    def start(self) -> SmiSampler:
        try:
            self._process = subprocess.Popen(
                self._command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        except OSError as error:
            self.error = f"nvidia-smi could not start: {error}"
            return self
        self._thread.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            reading = parse_line(line, time.time())
            if reading is not None:
                self.readings.append(reading)
            elif line.strip() and self.error is None:
                self.error = f"nvidia-smi said: {line.strip()}"

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:
                self._process.kill()
        if self._thread.is_alive():
            self._thread.join(5)
