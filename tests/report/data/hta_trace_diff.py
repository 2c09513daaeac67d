"""Record Holistic Trace Analysis's `TraceDiff` on the shared ResNet-50 num_workers 0/4 twins.

Not a test: the command that made `hta_trace_diff_resnet50.json`, which `tests/report/
test_diff.py` holds torchtop's operator and kernel deltas against. HTA is not a dependency of
torchtop or of its tests (it pulls in Jupyter); to remake the file:

    pip install --target /tmp/hta-site --no-deps HolisticTraceAnalysis==0.5.0 plotly narwhals \
        pydot pyparsing
    PYTHONPATH=/tmp/hta-site python tests/report/data/hta_trace_diff.py ../shared/traces \
        > tests/report/data/hta_trace_diff_resnet50.json

Both traces' iterations 5-10 (the six steps torchtop counts in each), CPU operators (`cpu_op`)
and GPU kernels (`kernel`) apart: per name HTA's counts and total durations (us) in the control
(num_workers 0) and test (num_workers 4) trace, and its `diff_counts` and `diff_duration`.
"""

from __future__ import annotations

import json
import sys

from hta.trace_diff import (  # type: ignore[import-not-found,unused-ignore]
    DeviceType,
    LabeledTrace,
    TraceDiff,
)

PAIR = ("resnet50_num_workers_0", "resnet50_num_workers_4")
CATEGORIES = {
    DeviceType.CPU: (("cpu_op", "Operator"), "operators"),
    DeviceType.GPU: (("kernel", "Kernel"), "kernels"),
}  # these 2021 traces name them "Operator" and "Kernel"; newer ones "cpu_op" and "kernel"


def main(shared: str) -> None:
    control, test = (
        LabeledTrace(label, trace_dir=f"{shared}/kineto-tb-plugin/{folder}")
        for label, folder in zip(("control", "test"), PAIR, strict=True)
    )
    iterations = {"control": control.iterations(), "test": test.iterations()}
    document: dict[str, object] = {"pair": list(PAIR), "iterations": iterations}
    for device, (categories, key) in CATEGORIES.items():
        diff = TraceDiff.compare_traces(
            control, test, control_iteration=iterations["control"],
            test_iteration=iterations["test"], device_type=device,
        )  # fmt: skip
        names = set()
        for trace, its in ((control, iterations["control"]), (test, iterations["test"])):
            summary = trace.get_ops_summary(trace.extract_ops(None, its, device))
            names |= set(summary[summary["cat"].isin(categories)]["name"])
        rows = diff[diff.index.isin(names)]
        document[key] = {
            name: {column: _plain(value) for column, value in row.items()}
            for name, row in rows.sort_index().iterrows()
        }
    json.dump(document, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


def _plain(value: object) -> object:
    return value.item() if hasattr(value, "item") else value


if __name__ == "__main__":
    main(sys.argv[1])
