"""Two independent ranks (no process group): rank 1 ends mid-run, rank 0 goes on.

Rank 1 SIGKILLs itself (`KILL_FILE` set), or hangs, alive, in `wait_forever()` (`HANG_FILE`
set instead), and writes the time it does so to that file just before. Rank 0 keeps training
until `AFTER_END_S` past that time, then exits 0.

Run without `RANK`, it is the launcher: it starts both ranks (as torchrun would, with `RANK`,
`LOCAL_RANK`, `WORLD_SIZE`), waits for rank 0, then stops rank 1 (SIGTERM) if it still runs,
polling as torchrun does. The launcher never imports torch, so it has no agent: how rank 1
ended is known from the records alone (`silent since`), as under a launcher that is not Python.
Training processes that do not synchronise: torchtop compares them by their own records.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STEPS_BEFORE_END = 15
AFTER_END_S = 8.0
AFTER_HANG_S = 10.0
"""Long enough for a hung rank to be called silent and dumped by the launcher."""
STEP_SLEEP_S = 0.02


def launch() -> int:
    children = [
        subprocess.Popen(
            [sys.executable, __file__],
            env={**os.environ, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "2"},
        )
        for r in (0, 1)
    ]
    codes = [children[0].wait()]
    if children[1].poll() is None:
        children[1].send_signal(signal.SIGTERM)
    while children[1].poll() is None:  # polled, as torchrun polls its ranks
        time.sleep(0.1)
    codes.append(children[1].returncode)
    print(f"ranks ended {codes}", flush=True)
    return 0


def wait_forever() -> None:
    """Where rank 1 hangs (a collective that never returns, in a real job)."""
    while True:
        time.sleep(1.0)


def end(end_file: Path, hang: bool) -> None:
    written = end_file.with_suffix(".tmp")
    written.write_text(f"{time.time()}\n")
    written.rename(end_file)  # whole, for rank 0 to read
    if hang:
        wait_forever()
    os.kill(os.getpid(), signal.SIGKILL)


def train(rank: int, end_file: Path, hang: bool) -> int:
    import torch  # here, not at the top: the launcher must not load the agent
    from torch import nn

    torch.set_num_threads(1)
    model = nn.Linear(64, 64)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs = torch.randn(16, 64)
    after_s = AFTER_HANG_S if hang else AFTER_END_S
    step = 0
    while True:
        time.sleep(STEP_SLEEP_S)
        model(inputs).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        if rank == 1 and step == STEPS_BEFORE_END:
            end(end_file, hang)
        waited_s = time.time() - float(end_file.read_text()) if end_file.is_file() else 0.0
        if rank == 0 and waited_s > after_s:
            return 0


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit(launch())
    hang = "HANG_FILE" in os.environ
    path = Path(os.environ["HANG_FILE" if hang else "KILL_FILE"])
    sys.exit(train(int(os.environ["RANK"]), path, hang))
