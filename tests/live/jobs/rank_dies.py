"""Two independent ranks (no process group): rank 1 SIGKILLs itself mid-run, rank 0 goes on.

Run without `RANK`, it is the launcher: it starts both ranks (as torchrun would, with `RANK`,
`LOCAL_RANK`, `WORLD_SIZE`), and waits. Rank 1 writes the time it dies to `$KILL_FILE` just
before its SIGKILL; rank 0 keeps training until `AFTER_KILL_S` past that time, then exits 0.
Training processes that do not synchronise: torchtop compares them by their own records.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

STEPS_BEFORE_KILL = 15
AFTER_KILL_S = 8.0
STEP_SLEEP_S = 0.02


def launch() -> int:
    children = [
        subprocess.Popen(
            [sys.executable, __file__],
            env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2"},
        )
        for r in (0, 1)
    ]
    codes = [child.wait() for child in children]
    print(f"ranks ended {codes}", flush=True)
    return 0


def train(rank: int, kill_file: Path) -> int:
    torch.set_num_threads(1)
    model = nn.Linear(64, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(16, 64)
    step = 0
    while True:
        time.sleep(STEP_SLEEP_S)
        model(inputs).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        if rank == 1 and step == STEPS_BEFORE_KILL:
            kill_file.write_text(f"{time.time()}\n")
            os.kill(os.getpid(), signal.SIGKILL)
        if rank == 0 and kill_file.is_file():
            killed_at = float(kill_file.read_text())
            if time.time() - killed_at > AFTER_KILL_S:
                return 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit(launch())
    sys.exit(train(int(os.environ["RANK"]), Path(os.environ["KILL_FILE"])))
