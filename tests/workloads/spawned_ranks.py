"""Two ranks started by `torch.multiprocessing.spawn`, as many single-node jobs start them: the
parent sets the rendezvous variables, the children inherit them (no RANK: mp.spawn passes the
rank as an argument). Each child prints `rank R pid P`, then sleeps until stopped."""

import os
import time

from torch.multiprocessing.spawn import spawn


def rank_main(rank: int) -> None:
    print(f"rank {rank} pid {os.getpid()}", flush=True)
    while True:
        time.sleep(0.05)


if __name__ == "__main__":
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29599", WORLD_SIZE="2")
    # torch 2.13 leaves spawn untyped.
    spawn(rank_main, nprocs=2)  # type: ignore[no-untyped-call]
