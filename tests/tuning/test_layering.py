"""tune's own process never imports torch: only the jobs it launches do."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import torchtop.advice.plan, torchtop.advice.show, torchtop.advice.machine
import torchtop.sessions.tune, torchtop.jobs.job
print('torch' in sys.modules)
"""


def test_planning_and_relaunching_import_no_torch() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "False"
