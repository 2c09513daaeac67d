"""A CPU's peak, measured with the job's torch: fp32 matmul TFLOP/s and copy TB/s, as JSON.

A CPU has no datasheet figure that a job could reach (cores, vector width, clocks under load and
the BLAS torch was built with all decide it), so the peak a CPU-only job is held against is what
this machine's torch reaches on a large matmul and a large copy. `collectors/cpu_peak.py` runs
this file with the job's Python, once per machine while the machine is idle, and caches the
answer; the analyzer never imports torch.

It imports nothing of torchtop, so it runs by path in any Python that has torch
(`python .../agent/cpu_peak.py`) as well as `python -m torchtop.agent.cpu_peak`. Both figures are
`torch.utils.benchmark` medians over blocked runs, on torch's default thread count (the caller
clears OMP_NUM_THREADS and the like, so a job's own limit does not shrink the machine's peak).
About a second of measuring, after torch's import.
"""

from __future__ import annotations

import json
import sys

MATMUL_N = 2048
"""2 * 2048^3 = 17.2 GFLOP a call: tens of ms on a few cores, a few on a big server."""
COPY_BYTES = 64 * 1024 * 1024
"""Far larger than any last-level cache, so the copy runs at memory speed."""
MATMUL_RUN_S = 0.6
COPY_RUN_S = 0.3


def measure() -> dict[str, object]:
    import torch
    from torch.utils import benchmark

    threads = torch.get_num_threads()
    a = torch.randn(MATMUL_N, MATMUL_N)
    b = torch.randn(MATMUL_N, MATMUL_N)
    out = torch.empty(MATMUL_N, MATMUL_N)
    torch.matmul(a, b, out=out)  # the BLAS's first call sets up its buffers
    matmul = benchmark.Timer(
        "torch.matmul(a, b, out=out)",
        globals={"torch": torch, "a": a, "b": b, "out": out},
        num_threads=threads,
    ).blocked_autorange(min_run_time=MATMUL_RUN_S)
    source = torch.empty(COPY_BYTES // 4)
    target = torch.empty_like(source)
    target.copy_(source)
    copy = benchmark.Timer(
        "target.copy_(source)",
        globals={"source": source, "target": target},
        num_threads=threads,
    ).blocked_autorange(min_run_time=COPY_RUN_S)
    return {
        "fp32_tflops": 2.0 * MATMUL_N**3 / matmul.median / 1e12,
        "tb_s": 2.0 * COPY_BYTES / copy.median / 1e12,  # each byte read once and written once
        "threads": threads,
        "torch": str(torch.__version__),
        "matmul_n": MATMUL_N,
        "copy_bytes": COPY_BYTES,
    }


def main() -> int:
    json.dump(measure(), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
