"""A job torchtop stops (`--for`, Ctrl-C, `q`) ends as a stop, not a crash: its cleanup runs,
no KeyboardInterrupt traceback reaches the terminal or the report's stderr tail, and the EXIT
section says who stopped it and when. A real job, without torch, so it takes seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CLEANS_UP


def test_a_for_stop_is_a_stop_with_the_jobs_cleanup_and_no_traceback(tmp_path: Path) -> None:
    done, run_dir, report = tmp_path / "done", tmp_path / "run", tmp_path / "report.json"
    torchtop = [sys.executable, "-m", "torchtop", "run", "--headless", "--for", "2"]
    job = [sys.executable, str(CLEANS_UP), str(done)]
    result = subprocess.run(
        [*torchtop, "--run-dir", str(run_dir), "--report", str(report), "--", *job],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert done.read_text() == "cleaned up"  # stopped, never harmed: its `finally` ran
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr
    ending = json.loads(report.read_text())["exit"]
    assert (ending["how"], ending["signal"]) == ("stopped", "SIGINT")
    assert not any("Traceback" in line for line in ending["stderr_tail"]), ending
    exit_line = next(line for line in result.stdout.splitlines() if line.startswith("EXIT"))
    seconds = float(exit_line.split("stopped by torchtop after ")[1].removesuffix(" s"))
    assert 2 <= seconds < 30, exit_line
