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

from torchtop.analysis.efficiency import CPU_DEVICE, with_peak
from torchtop.model.analysis import RankAnalysis
from torchtop.model.efficiency import Efficiency
from torchtop.model.peak import Peak


def with_cpu_peak(efficiency: Efficiency, peak: Peak | None) -> Efficiency:
    """`efficiency` against `peak` where it is a CPU-only job's and has no peak of its own;
    otherwise as it is (a GPU's datasheet peak is never replaced by a CPU's)."""
    if peak is None or efficiency.peak is not None or efficiency.device != CPU_DEVICE:
        return efficiency
    return with_peak(efficiency, peak)


def analysis_with_cpu_peak(analysis: RankAnalysis, peak: Peak | None) -> RankAnalysis:
    """`analysis` with its efficiency against `peak` (`with_cpu_peak`)."""
    if analysis.efficiency is None or peak is None:
        return analysis
    return replace(analysis, efficiency=with_cpu_peak(analysis.efficiency, peak))
