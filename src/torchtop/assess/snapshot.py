"""One tick of the live view as data: the report, the verdict shown after hysteresis, the state.

The dashboard and the headless printer read it; it holds no process and no thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchtop.model.findings import Verdict
from torchtop.model.report import Report
from torchtop.runs.state import RunState

STEP_SIGNAL_LABELS = {
    "explicit": "torchtop.step()",
    "optimizer": "optimizer.step()",
    "backward": "backward()",
    "dataloader": "DataLoader batches",
}
"""The agent's `step_signal` values, as the dashboard names them (`assess.run` words the
report's note)."""


@dataclass(frozen=True)
class Snapshot:
    """The run as of one tick: the full report, the verdict to show, the raw state."""

    report: Report
    shown: Verdict
    state: RunState
    elapsed_s: float
    finished: bool
