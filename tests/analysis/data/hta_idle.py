"""Record Holistic Trace Analysis's GPU idle time breakdown on the shared traces it can read.

Not a test: the command that made `hta_idle_breakdown.json`, which `tests/analysis/test_idle.py`
holds torchtop's `idle_breakdown` against. HTA is not a dependency of torchtop or of its tests
(it pulls in Jupyter); to remake the file:

    pip install --target /tmp/hta-site --no-deps HolisticTraceAnalysis==0.5.0 plotly narwhals \
        pydot pyparsing
    PYTHONPATH=/tmp/hta-site python tests/analysis/data/hta_idle.py ../shared/traces \
        > tests/analysis/data/hta_idle_breakdown.json

Each trace file is read alone as rank 0, with `include_last_profiler_step=True` so that HTA
keeps the device work of every profiled step. Per CUDA stream: the idle time (us) in each of
HTA's categories at its default `consecutive_kernel_delay` (30, in the trace's microseconds), by
HTA's own per-stream classification, except that a launch not in the trace is taken as unknown
(HTA reads the trace's first event as that launch, see `_breakdown`; what HTA itself reports is
kept as `reported_*`); and the device events counted there (kernels, memcpy, memset): how many,
the first one's start and the last one's end in the trace's own microseconds, so a test can give
torchtop the same window. A trace HTA cannot read records its error instead.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from hta.analyzers.breakdown_analysis import (  # type: ignore[import-not-found,unused-ignore]
    BreakdownAnalysis,
)
from hta.trace_analysis import TraceAnalysis  # type: ignore[import-not-found,unused-ignore]
from hta.utils.utils import IdleTimeType  # type: ignore[import-not-found,unused-ignore]

DEVICE_CATEGORIES = ("kernel", "Kernel", "gpu_memset", "Memset", "gpu_memcpy", "Memcpy")
DELAY_US = 30
CATEGORY_CODES = [(t.value, t.name.lower()) for t in IdleTimeType]


def main(shared: str) -> None:
    logging.disable(logging.WARNING)
    root = Path(shared)
    document: dict[str, object] = {"hta": "0.5.0", "consecutive_kernel_delay_us": DELAY_US}
    traces: dict[str, object] = {}
    for path in sorted(root.rglob("*.json.gz")):
        name = path.relative_to(root).as_posix()
        try:
            traces[name] = _breakdown(str(path.resolve()))
        except Exception as error:  # a trace HTA cannot read is recorded as such
            traces[name] = {"error": f"{type(error).__name__}: {error}"[:200]}
        print(name, file=sys.stderr)
    document["traces"] = traces
    json.dump(document, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


def _breakdown(path: str) -> dict[str, object]:
    analysis = TraceAnalysis(trace_files={0: path}, trace_dir="/", include_last_profiler_step=True)
    reported, _ = analysis.get_idle_time_breakdown(
        visualize=False, consecutive_kernel_delay=DELAY_US
    )
    trace = analysis.t.get_trace(0)
    codes = analysis.t.symbol_table.get_sym_id_map()
    device = trace[
        trace["stream"].ne(-1) & trace["cat"].isin([codes.get(c) for c in DEVICE_CATEGORIES])
    ]
    # HTA joins each device event to the event at `index_correlation`; where the launch is not in
    # the trace that index is 0, so the trace's first event stands in for the launch. Here an
    # unknown launch is unknown (NaN), as HTA means it: otherwise HTA's own classification.
    launch = trace.set_index("index")["ts"]
    known = device["index_correlation"].gt(0)
    kernels = device.assign(ts_runtime=device["index_correlation"].map(launch).where(known))
    streams: dict[str, dict[str, float]] = {}
    for stream, rows in device.groupby("stream"):
        idle, _ = BreakdownAnalysis._analyze_idle_time_for_stream(stream, kernels, DELAY_US)
        mine = reported[reported["stream"] == stream]
        streams[str(stream)] = {
            "events": len(rows),
            "events_without_launch": int((~known[rows.index]).sum()),
            "first_start_us": float(rows["ts"].min() + analysis.t.min_ts),
            "last_end_us": float((rows["ts"] + rows["dur"]).max() + analysis.t.min_ts),
            **{f"{c}_us": float(idle["idle_time"].get(n, 0.0)) for n, c in CATEGORY_CODES},
            **{
                f"reported_{c}_us": float(mine[mine["idle_category"] == c]["idle_time"].sum())
                for _, c in CATEGORY_CODES
            },
        }
    return {"streams": streams}


if __name__ == "__main__":
    main(sys.argv[1])
