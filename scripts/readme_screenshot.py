"""Render `torchtop analyze` on a sample trace, in colour, to an SVG for the README.

Runs the real command with colour forced and converts its ANSI output with rich (a dependency
of textual), so the picture is exactly what a terminal shows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    trace = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "sample_traces" / "dataloader_starved")
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "docs" / "analyze.svg"
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "analyze", trace, "--color", "always"],
        capture_output=True,
        text=True,
        check=True,
    )
    with open(os.devnull, "w") as sink:
        console = Console(record=True, width=110, force_terminal=True, file=sink)
        console.print(Text.from_ansi(result.stdout))
        console.save_svg(str(out), title=f"torchtop analyze {Path(trace).name}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
