"""A CPU-only job's efficiency held against its machine's measured peak.

A trace says which GPU ran it, and `analysis.efficiency` finds that GPU's datasheet peak; a
CPU-only trace names no device whose figures a table could hold, so its efficiency comes out
without a peak and without MFU. The launcher reads this machine's measured CPU peak
(`collectors/cpu_peak.py`, taken on an idle machine and cached) before the job starts and passes
it in the assessment's context; here it becomes the peak of every CPU-only efficiency that has
none, so the roofline fractions, bounds and MFU are counted against it.
"""

from __future__ import annotations

from msgspec.structs import replace

# `_key_of` rebuilds a row's argument key as the trace reader wrote it; with_cpu_peak would be
# better beside it in analysis.efficiency (asked of its owner).
from torchtop.analysis.efficiency import CPU_DEVICE, _key_of, assemble
from torchtop.analysis.op_cost import OpCost
from torchtop.model.analysis import RankAnalysis
from torchtop.model.efficiency import Efficiency
from torchtop.model.peak import Peak


def with_cpu_peak(efficiency: Efficiency, peak: Peak | None) -> Efficiency:
    """`efficiency` against `peak` where it is a CPU-only job's and has no peak of its own;
    otherwise as it is (a GPU's datasheet peak is never replaced by a CPU's)."""
    if peak is None or efficiency.peak is not None or efficiency.device != CPU_DEVICE:
        return efficiency
    facts = [
        (
            row.name,
            _key_of(row),
            OpCost(row.flops, row.bytes, row.family, row.dtype),
            row.calls,
            row.time_us,
        )
        for row in efficiency.ops
    ]
    return assemble(
        device=efficiency.device,
        peak=peak,
        steps=efficiency.steps,
        step_mean_us=efficiency.step_mean_us,
        facts=facts,
        time_source=efficiency.time_source,
        idle=efficiency.idle,
    )


def analysis_with_cpu_peak(analysis: RankAnalysis, peak: Peak | None) -> RankAnalysis:
    """`analysis` with its efficiency against `peak` (`with_cpu_peak`)."""
    if analysis.efficiency is None or peak is None:
        return analysis
    return replace(analysis, efficiency=with_cpu_peak(analysis.efficiency, peak))
