"""A DataLoader-starved job with no command-line options: `num_workers=0` is in the code.

Optional positional words: the number of steps (default: run until stopped) and a file to
write the losses to. `STARVED_SLEEP_MS` in the environment sets each sample's sleep (default 3).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from starved_loop import train

if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    sleep_ms = float(os.environ.get("STARVED_SLEEP_MS", "3"))
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    train(steps, num_workers=0, sleep_ms=sleep_ms, out=out)
