"""A job that keeps `--step-mib` more each step (written, so resident) under an address-space
limit it sets itself, and dies of it: after its first `--free-steps` steps it sets RLIMIT_AS to
its address space then (VmSize) plus `--headroom-mib`, and goes on until an allocation fails.

Before setting the limit it writes `--mark FILE`: the limit, and the Unix time it was set. It
dies as a job that outgrows its memory does, of the failed allocation's exception, and a
stopped-at-death truth is read from its agent's last step.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import torch

MIB = 2**20


def vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--step-mib", type=int, default=4)
    parser.add_argument("--step-s", type=float, default=0.06)
    parser.add_argument("--free-steps", type=int, default=4)
    parser.add_argument("--headroom-mib", type=int, default=640)
    parser.add_argument("--mark", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    model = torch.nn.Linear(32, 32)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    kept = []
    for step in range(1_000_000):
        began = time.perf_counter()
        if step == args.free_steps:
            limit = vm_size() + args.headroom_mib * MIB
            Path(args.mark).write_text(json.dumps({"limit": limit, "t": time.time()}))
            resource.setrlimit(
                resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1])
            )
        kept.append(torch.ones(args.step_mib * MIB // 4))
        model(torch.randn(8, 32)).sum().backward()
        optimizer.step()
        optimizer.zero_grad()
        time.sleep(max(args.step_s - (time.perf_counter() - began), 0.0))


if __name__ == "__main__":
    main()
