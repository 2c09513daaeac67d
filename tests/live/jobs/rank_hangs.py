"""Two independent ranks (no process group): rank 1 hangs mid-run in `wait_forever()`, alive.

Run without `RANK`, it is the launcher: it starts both ranks (as torchrun would, with `RANK`,
`LOCAL_RANK`, `WORLD_SIZE`), waits for rank 0, then stops rank 1 (SIGTERM). Rank 1 writes the
time it hangs to `$HANG_FILE`; rank 0 keeps training until `AFTER_HANG_S` past that time (long
enough for the rank to be called silent and dumped), then exits 0.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from torch import nn

STEPS_BEFORE_HANG = 15
AFTER_HANG_S = 10.0
STEP_SLEEP_S = 0.02


def launch() -> int:
    children = [
        subprocess.Popen(
            [sys.executable, __file__],
            env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2"},
        )
        for r in (0, 1)
    ]
    code = children[0].wait()
    children[1].send_signal(signal.SIGTERM)
    while children[1].poll() is None:  # polled, as torchrun polls its ranks
        time.sleep(0.1)
    print(f"rank 0 ended {code}", flush=True)
    return 0


def wait_forever() -> None:
    """Where rank 1 hangs (a collective that never returns, in a real job)."""
    while True:
        time.sleep(1.0)


def train(rank: int, hang_file: Path) -> int:
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
        if rank == 1 and step == STEPS_BEFORE_HANG:
            written = hang_file.with_suffix(".tmp")
            written.write_text(f"{time.time()}\n")
            written.rename(hang_file)  # whole, for rank 0 to read
            wait_forever()
        waited_s = time.time() - float(hang_file.read_text()) if hang_file.is_file() else 0.0
        if rank == 0 and waited_s > AFTER_HANG_S:
            return 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit(launch())
    sys.exit(train(int(os.environ["RANK"]), Path(os.environ["HANG_FILE"])))
