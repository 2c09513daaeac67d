"""Writes `matmul/worker0.<ms>.pt.trace.json.gz`: a real profiler window of the known-matmul
job (`tests/workloads/matmul_job.py`'s step: 6 `torch.mm` of 192x256 by 256x320, then the
optimizer's step), taken by the agent's own `ProfilerWindow` (shapes recorded), 4 steps. The
dashboard's efficiency snapshot replays it as a live run's window.

    python tests/tui/data/make_matmul_window.py
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import torch
from tests.workloads.matmul_job import MATMULS, K, M, N

from torchtop.agent.profiler_window import ProfilerWindow

HERE = Path(__file__).resolve().parent / "matmul"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:  # the window's logs/ stay out of the tests
        taken = take_window(Path(scratch) / "traces")
        HERE.mkdir(exist_ok=True)
        for old in HERE.glob("*.pt.trace.json.gz"):
            old.unlink()
        print(shutil.move(taken, HERE / taken.name))


def take_window(traces: Path) -> Path:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    a, b = torch.randn(M, K), torch.randn(K, N)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
    window = ProfilerWindow(traces, "worker0", first_step=5, steps=4)
    with torch.no_grad():
        for _ in range(3):  # warm the BLAS up, as the job's first steps do
            torch.mm(a, b)
        window.open()
        done = False
        while not done:
            for _ in range(MATMULS):
                torch.mm(a, b)
            optimizer.step()
            done = window.step_ended()
    return window.save(int(time.time() * 1000))


if __name__ == "__main__":
    main()
