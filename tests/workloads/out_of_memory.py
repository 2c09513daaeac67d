"""A job that trains a few steps and then dies of out-of-memory, as a CUDA job that outgrows its
card does: the CPU here cannot run out safely, so the error is raised with the words PyTorch's
CUDA caching allocator uses (`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also when a test imports MESSAGE
from crashes import train

STEPS = 20
MESSAGE = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB "
    "of which 1.12 GiB is free."
)


def main() -> None:
    train(STEPS)
    raise torch.OutOfMemoryError(MESSAGE)


if __name__ == "__main__":
    main()
