"""A DataLoader-starved job with no command-line options: `num_workers=0` is in the code.

Optional positional words: the number of steps (default: run until stopped) and a file to
write the losses to.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from starved_loop import train

if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    train(steps, num_workers=0, sleep_ms=3.0, out=Path(sys.argv[2]) if len(sys.argv) > 2 else None)
