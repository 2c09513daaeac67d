"""Communication overlap and message sizes, against numbers derived by hand from raw events.

A hand-written two-step trace whose overlap can be worked out on paper, and the A100 DDP trace
(`hta/nccl_parser_config`) swept event by event here, without the analysis's interval code.
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import analyze_json
from tests.synthetic import Loop, document, span, write_json

NCCL_DDP = "hta/nccl_parser_config/nccl_data.json.gz"
ALL_REDUCE_KERNEL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"
BACKWARD_OP = "autograd::engine::evaluate_function: AddmmBackward0"
FOUR_MIB_FLOATS = 1 << 20


def ddp_step(loop: Loop, number: int, at: float) -> None:
    """One 300 µs step (times after `at`):

    host:   forward launches at 10; the backward operator [60, 160) launches at 65;
            `record_param_comms` [130, 150) launches the all-reduce at 135; a copy at 150
    device: forward kernel [20, 60), backward kernel [70, 180), all-reduce [140, 290),
            copy [200, 210)
    """
    loop.step(number, at, 300)
    loop.launch(at + 10, 5, device_ts=at + 20, device_dur=40)
    loop.op(BACKWARD_OP, at + 60, 100)
    loop.launch(at + 65, 5, device_ts=at + 70, device_dur=110)
    loop.events.append(
        span(
            "cpu_op",
            "record_param_comms",
            at + 130,
            20,
            **{
                "Collective name": "allreduce",
                "In msg nelems": FOUR_MIB_FLOATS,
                "Out msg nelems": FOUR_MIB_FLOATS,
                "dtype": "Float",
                "Group size": 4,
            },
        )
    )
    loop.launch(at + 135, 5, device_ts=at + 140, device_dur=150, name=ALL_REDUCE_KERNEL)
    loop.launch(at + 150, 5, device_ts=at + 200, device_dur=10, kind="memcpy")


@pytest.fixture(scope="module")
def hand_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    loop = Loop()
    for number, at in ((1, 0.0), (2, 300.0), (3, 600.0)):
        ddp_step(loop, number, at)
    path = tmp_path_factory.mktemp("overlap") / "ddp.json"
    return analyze_json(write_json(path, document(loop.events)))


def test_the_hand_made_steps_overlap_as_worked_out_on_paper(hand_report: dict[str, Any]) -> None:
    # All-reduce [140, 290) = 150 µs. Beside it: the backward kernel until 180 (40 µs) and
    # the copy [200, 210) (10 µs): 50 µs hidden, 100 µs exposed, a third of each 300 µs step.
    m = hand_report["metrics"]
    assert m["comm_time_ms"] == pytest.approx(0.150)
    assert m["comm_hidden_ms"] == pytest.approx(0.050)
    assert m["comm_exposed_ms"] == pytest.approx(0.100)
    assert m["allreduce_exposed_ms"] == pytest.approx(0.100)
    assert m["comm_exposed_share"] == pytest.approx(100 / 300, abs=0.01)
    # Backward work is what the host launched from the backward operator (60) on: the kernel
    # [70, 180) and the copy [200, 210); less the all-reduce [140, 290), [70, 140) = 70 µs,
    # under the 100 µs exposed: no overlap could have hidden it all (100 / 70 = 1.43x).
    assert m["backward_compute_ms"] == pytest.approx(0.070)
    assert m["allreduce_exposed_vs_backward"] == pytest.approx(100 / 70)


def test_the_hand_made_all_reduces_have_their_sizes_and_nccl_tests_bandwidths(
    hand_report: dict[str, Any],
) -> None:
    entry = hand_report["communication"]["all_reduce"]
    # Three calls of 2**20 floats: 4 MiB each. 4,194,304 B in 150 µs = 27.96 GB/s algbw; on
    # four ranks the all-reduce's bus factor is 2 (4 - 1) / 4 = 1.5: 41.94 GB/s busbw.
    assert entry["count"] == 3
    assert entry["bytes"] == 3 * 4 * FOUR_MIB_FLOATS
    assert entry["messages"] == {
        "count": 3,
        "total_bytes": 3 * 4.0 * FOUR_MIB_FLOATS,
        "median_bytes": 4.0 * FOUR_MIB_FLOATS,
        "largest_bytes": 4.0 * FOUR_MIB_FLOATS,
        "group_size": 4,
    }
    assert entry["algbw_gbps"] == pytest.approx(4 * FOUR_MIB_FLOATS / 150e-6 / 1e9, abs=0.001)
    assert entry["busbw_gbps"] == pytest.approx(entry["algbw_gbps"] * 1.5, abs=0.002)


def test_the_no_sync_fix_is_offered_where_the_backward_pass_is_too_short_to_hide_the_all_reduce(
    hand_report: dict[str, Any],
) -> None:
    finding = next(f for f in hand_report["findings"] if f["rule"] == "allreduce-beyond-backward")
    assert [fix["knob"] for fix in finding["fixes"]] == ["code.gradient_accumulation"]
    # Recovering the exposed third of the step: 1 / (1 - 1/3) = 1.5x at most.
    assert finding["predicted_gain"] == pytest.approx(1.5, abs=0.01)


def raw_events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    return events


def swept_overlap(events: list[dict[str, Any]]) -> tuple[float, float]:
    """(collective µs, exposed µs) over the profiled steps, by sweeping every boundary."""
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo = min(float(e["ts"]) for e in steps)
    hi = max(float(e["ts"]) + float(e["dur"]) for e in steps)
    comm: list[tuple[float, float]] = []
    other: list[tuple[float, float]] = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        interval = (max(float(e["ts"]), lo), min(float(e["ts"]) + float(e["dur"]), hi))
        if interval[0] < interval[1]:
            (comm if "nccl" in e["name"].lower() else other).append(interval)
    cuts = sorted({t for a, b in comm + other for t in (a, b)})
    total = exposed = 0.0
    for a, b in itertools.pairwise(cuts):
        middle = (a + b) / 2
        if any(s <= middle < e for s, e in comm):
            total += b - a
            if not any(s <= middle < e for s, e in other):
                exposed += b - a
    return total, exposed


def test_a_real_ddp_traces_exposed_communication_matches_a_sweep_over_its_events(
    shared: Path,
) -> None:
    total_us, exposed_us = swept_overlap(raw_events(shared / NCCL_DDP))
    report = analyze_json(shared / NCCL_DDP)
    steps = report["metrics"]["steps_count"]
    assert report["metrics"]["comm_time_ms"] * steps == pytest.approx(total_us / 1000, abs=0.01)
    assert report["metrics"]["comm_exposed_ms"] * steps == pytest.approx(
        exposed_us / 1000, abs=0.01
    )
    assert 0 < exposed_us < total_us


def direct_sizes(events: list[dict[str, Any]], kind: str) -> list[float]:
    """Bytes of each `record_param_comms` call of `kind` in the steps: max(in, out) x 4 or 2."""
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo = min(float(e["ts"]) for e in steps)
    hi = max(float(e["ts"]) + float(e["dur"]) for e in steps)
    element = {"Float": 4, "BFloat16": 2, "Long": 8}
    return [
        max(e["args"]["In msg nelems"], e["args"]["Out msg nelems"]) * element[e["args"]["dtype"]]
        for e in events
        if e.get("name") == "record_param_comms"
        and e["args"].get("Collective name") == kind
        and lo <= float(e["ts"]) < hi
    ]


@pytest.mark.parametrize(
    "trace", [NCCL_DDP, "tracelens/mi300/resnet_act_checkpoint.json.gz"], ids=["a100", "mi300"]
)
def test_real_traces_report_the_sizes_their_calls_record(shared: Path, trace: str) -> None:
    sizes = sorted(direct_sizes(raw_events(shared / trace), "allreduce"))
    entry = analyze_json(shared / trace)["communication"]["all_reduce"]
    assert entry["bytes"] == sum(sizes)
    assert entry["messages"]["count"] == len(sizes)
    assert entry["messages"]["largest_bytes"] == sizes[-1]
    assert entry["busbw_gbps"] > 0


def test_the_a100_all_reduce_bandwidth_is_its_bytes_over_its_kernels_time(shared: Path) -> None:
    events = raw_events(shared / NCCL_DDP)
    # Its NCCL kernels carry their call's sizes too: bytes over each kernel's own duration.
    kernels = [e for e in events if e.get("cat") == "kernel" and "AllReduce" in e["name"]]
    moved = sum(e["args"]["In msg nelems"] * 4 for e in kernels)
    seconds = sum(float(e["dur"]) for e in kernels) / 1e6
    entry = analyze_json(shared / NCCL_DDP)["communication"]["all_reduce"]
    # Two ranks: busbw = algbw x 2 (2 - 1) / 2 = algbw.
    assert entry["algbw_gbps"] == pytest.approx(moved / seconds / 1e9, abs=0.001)
    assert entry["busbw_gbps"] == entry["algbw_gbps"]


def test_a_trace_without_sizes_reports_null_never_zero(shared: Path) -> None:
    report = analyze_json(
        shared / "param/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json.gz"
    )
    for entry in report["communication"].values():
        assert entry["bytes"] is None
        assert entry["messages"] is None
        assert entry["busbw_gbps"] is None
