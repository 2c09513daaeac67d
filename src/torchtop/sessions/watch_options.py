"""What the watching verbs (`run`, `demo`, `attach`, `watch`) were asked on the command line.

One frozen value, built once by the CLI and passed whole to each use case, which reads the
fields it needs; its own module so that every session module can take it without importing
another's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from torchtop.collectors.pace import BUDGET_SHARE


@dataclass(frozen=True)
class WatchOptions:
    headless: bool
    for_s: float | None
    report: str | None
    run_dir: Path | None
    metrics: str | None = None
    """`--metrics [HOST:]PORT`: serve Prometheus metrics of this node while watching."""
    serve: str | None = None
    """`--serve [HOST:]PORT`: serve this node's records for `watch URL` (`run`, `demo`)."""
    token: str | None = None
    """`--token`: the streams' bearer token (`watch URL`)."""
    tensorboard: str | None = None
    """`--tensorboard [DIR]`: write TensorBoard event files there ("": `RUN/tensorboard`)."""
    output_format: str = "text"
    """`--format json`: the final report on stdout as the JSON report, not as text."""
    sample_budget_share: float = BUDGET_SHARE
    """`attach --sample-budget`: the native sampler's own CPU it aims under, of one core."""
