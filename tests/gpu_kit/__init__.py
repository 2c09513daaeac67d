"""Tests of the GPU acceptance kit (benchmarks/gpu) on recorded outputs and on the CPU."""

from __future__ import annotations

import sys
from pathlib import Path

KIT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"
for folder in (KIT, KIT / "jobs"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
