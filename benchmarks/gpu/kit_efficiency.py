"""The efficiency checks: the report's `efficiency` against the jobs' own truths.

`jobs/gemm.py` prints `KIT-GEMM n=.. dtype=.. flops=.. tflops_s=..` (torch.utils.benchmark's
timing of the same `torch.mm`), and `jobs/small_gpt.py` prints `KIT-GPT params=.. tokens=..
flops_6n=.. flops_palm=..`. The checks are pure functions of those lines, the report and the
job's own steps/s, so each pass/fail rule is tested here without a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kit_checks import Check, _off, within

TRUTH = re.compile(r"^(?P<kind>KIT-GEMM|KIT-GPT) (?P<pairs>(?:\w+=\S+ ?)+)$")
GEMM_RATE_SHARE = 0.10
"""The mm's TFLOP/s from its kernels' time, against torch.utils.benchmark's timing of it."""
GPT_MFU_SHARE = 0.15
"""torchtop's MFU against the PaLM count's: torchtop counts every operator it models (norms,
the optimizer, the causal mask as the kernels run it), the formula only the matmuls."""


def truths(text: str) -> dict[str, dict[str, float | str]]:
    """The truth lines in a job's output, by kind ("gemm", "gpt"); the last of each wins."""
    found: dict[str, dict[str, float | str]] = {}
    for row in text.splitlines():
        match = TRUTH.match(row.strip())
        if match is None:
            continue
        pairs = dict(pair.split("=", 1) for pair in match["pairs"].split())
        found[match["kind"].removeprefix("KIT-").lower()] = {
            k: _number(v) for k, v in pairs.items()
        }
    return found


def _number(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def efficiency_of(report: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The report's `efficiency`: the run's, else its first rank's."""
    if report is None:
        return None
    found = report.get("efficiency")
    if found is None:
        ranks = [r.get("efficiency") for r in report.get("ranks") or [] if r.get("efficiency")]
        found = ranks[0] if ranks else None
    return found if isinstance(found, Mapping) else None


def gemm_checks(
    job: str, report: Mapping[str, Any] | None, truth: Mapping[str, Any]
) -> list[Check]:
    """The n x n x n `aten::mm`: FLOPs per call exactly 2 n^3, TFLOP/s within 10% of
    torch.utils.benchmark's."""
    efficiency = efficiency_of(report)
    if not truth or efficiency is None:
        why = "the job printed no KIT-GEMM line" if not truth else "the report has no efficiency"
        return [_off("GEMM FLOPs", job, why), _off("GEMM TFLOP/s", job, why)]
    n = int(truth["n"])
    square = [[n, n], [n, n]]
    ops = efficiency.get("ops") or []
    rows = [op for op in ops if op.get("name") == "aten::mm" and op.get("input_dims") == square]
    if not rows:
        why = f"no aten::mm of [[{n}, {n}], [{n}, {n}]] among the report's operators"
        return [_off("GEMM FLOPs", job, why), _off("GEMM TFLOP/s", job, why)]
    row, flops = rows[0], float(truth["flops"])
    exact = row.get("flops") == flops
    counted = Check(
        "GEMM FLOPs", job, exact, f"torchtop {row.get('flops')} per call, 2n^3 = {flops:.0f}"
    )
    rate = within("GEMM TFLOP/s", job, row.get("tflops_s"), float(truth["tflops_s"]),
                  GEMM_RATE_SHARE, relative=True, unit=" TFLOP/s")  # fmt: skip
    return [counted, rate]


def gpt_checks(job: str, report: Mapping[str, Any] | None, truth: Mapping[str, Any],
               steps_per_s: float | None) -> list[Check]:  # fmt: skip
    """torchtop's MFU against (PaLM's FLOPs per step) x the job's steps/s / the report's bf16
    peak (the peak table is checked elsewhere: here the FLOPs and the time)."""
    efficiency = efficiency_of(report)
    if not truth or efficiency is None:
        why = "the job printed no KIT-GPT line" if not truth else "the report has no efficiency"
        return [_off("GPT MFU", job, why)]
    peak = ((efficiency.get("peak") or {}).get("tflops") or {}).get("bf16")
    if peak is None or steps_per_s is None:
        return [_off("GPT MFU", job, "no bf16 peak in the report" if peak is None else "no rate")]
    palm = float(truth["flops_palm"]) * steps_per_s / (float(peak) * 1e12)
    six_n = float(truth["flops_6n"]) * steps_per_s / (float(peak) * 1e12)
    found = within("GPT MFU", job, efficiency.get("mfu"), palm, GPT_MFU_SHARE, relative=True)
    counted = efficiency.get("flops_per_step")
    figure = (
        f"{found.figure}; 6N alone gives {six_n:.4g}; FLOPs/step torchtop {counted}, "
        f"PaLM {truth['flops_palm']:.4g}"
    )
    return [Check(found.name, job, found.passed, figure)]


def efficiency_checks(
    kind: str,
    job: str,
    report: Mapping[str, Any] | None,
    found: Mapping[str, Any],
    steps_per_s: float | None,
) -> list[Check]:
    """The checks of a job planted with efficiency truth `kind` ("gemm" or "gpt")."""
    truth = found.get(kind) or {}
    if kind == "gemm":
        return gemm_checks(job, report, truth)
    return gpt_checks(job, report, truth, steps_per_s)
