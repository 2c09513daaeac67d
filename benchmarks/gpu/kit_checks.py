"""The kit's checks: torchtop's figures against outside truth, each with its figure.

Pure functions of recorded values (reports, the jobs' own KIT figures, nvidia-smi readings), so
each pass/fail rule is tested here on recorded outputs. `passed` is None where a side was not
measured: the check is then reported as not run, never as passed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

UTILIZATION_POINTS = 10.0
MEMORY_SHARE = 0.02
KERNEL_SHARE_POINTS = 0.10
RATE_SHARE = 0.05
COST_SHARE = 0.03
COMPILE_STEP_SHARE = 0.10
PRECISION_MIN_SPEEDUP = 1.5


@dataclass(frozen=True)
class Check:
    name: str
    job: str
    passed: bool | None
    figure: str
    """torchtop's number against the truth's, in words, with the rule applied."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _off(name: str, job: str, why: str) -> Check:
    return Check(name, job, None, f"not measured: {why}")


def findings(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(report.get("findings") or [])


def fixes_of(report: Mapping[str, Any], rule: str) -> list[Mapping[str, Any]]:
    return [fix for f in findings(report) if f.get("rule") == rule for fix in f.get("fixes") or []]


def verdict(
    job: str, report: Mapping[str, Any] | None, bottleneck: str | None, rule: str | None
) -> Check:
    """The report names the planted class (when one is planted) and the planted rule."""
    if report is None:
        return _off("verdict", job, "no report")
    named = report.get("bottleneck")
    rules = [str(f.get("rule")) for f in findings(report)]
    first = rules[0] if rules else "none"
    ok = (bottleneck is None or named == bottleneck) and (rule is None or rule in rules)
    figure = (
        f"bottleneck {named} (planted {bottleneck or 'any'}), first finding {first}, "
        f"planted rule {rule or '-'} {'found' if rule in rules else 'missing'}; all: {rules}"
    )
    return Check("verdict", job, ok, figure)


def fix_offered(job: str, report: Mapping[str, Any] | None, rule: str, knob: str) -> Check:
    """The planted rule's finding offers the fix with this knob."""
    if report is None:
        return _off(f"fix {knob}", job, "no report")
    knobs = [str(fix.get("knob")) for fix in fixes_of(report, rule)]
    return Check(f"fix {knob}", job, knob in knobs, f"{rule} offers {knobs or 'nothing'}")


def fix_located(
    job: str, report: Mapping[str, Any] | None, rule: str, file_name: str, line: int
) -> Check:
    """A code fix of the rule points at the planted `file:line`."""
    if report is None:
        return _off("fix location", job, "no report")
    wheres = [str(fix.get("where")) for fix in fixes_of(report, rule) if fix.get("where")]
    wanted = f"{file_name}:{line}"
    ok = any(wanted in where for where in wheres)
    return Check(
        "fix location", job, ok, f"want {wanted}; {rule} fixes point at {wheres or 'none'}"
    )


def within(name: str, job: str, ours: float | None, truth: float | None, limit: float,
           *, relative: bool, unit: str = "") -> Check:  # fmt: skip
    """`ours` against `truth`: absolute difference (or relative to truth) at most `limit`."""
    if ours is None or truth is None:
        side = "torchtop" if ours is None else "truth"
        return _off(name, job, f"{side} has no figure")
    gap = abs(ours - truth) / abs(truth) if relative and truth else abs(ours - truth)
    shown = f"{gap:.1%}" if relative else f"{gap:.3g}{unit}"
    bound = f"{limit:.0%}" if relative else f"{limit:.3g}{unit}"
    figure = f"torchtop {ours:.4g}{unit} vs truth {truth:.4g}{unit}: off by {shown} (limit {bound})"
    return Check(name, job, gap <= limit, figure)


def same_steps(job: str, report: Mapping[str, Any] | None, own: Mapping[str, Any]) -> Check:
    """The report's per-step durations, summed between the first and last of the job's KIT
    lines that the report's steps span, against the job's own clock there (RATE_SHARE).

    The report numbers steps from 0 (as the profiler's `ProfilerStep#N`), the job counts them
    from 1: the job's steps (a, b] are the report's steps a to b - 1 (so matched, the dry run of
    2026-11-27 agreed within 1.6% on every job, most two-step spans to the millisecond)."""
    per_step = ((report or {}).get("steps") or {}).get("per_step") or []
    durations = {int(s["step"]): float(s["duration_ms"]) for s in per_step}
    marks = [(int(step), float(t)) for step, t in own.get("marks") or []]
    inside = [m for m in marks if durations and min(durations) <= m[0] <= max(durations) + 1]
    if len(inside) < 2:
        return _off("step times", job, "the report's steps span no two of the job's lines")
    (a, t_a), (b, t_b) = inside[0], inside[-1]
    missing = [n for n in range(a, b) if n not in durations]
    if missing:
        return _off("step times", job, f"the report lacks {len(missing)} of steps {a}-{b - 1}")
    ours = sum(durations[n] for n in range(a, b)) / 1000.0
    found = within("step times", job, ours, t_b - t_a, RATE_SHARE, relative=True, unit=" s")
    return Check(found.name, job, found.passed, f"job's steps {a + 1}-{b}: " + found.figure)


def agent_cost(job: str, bare_per_s: float | None, run_per_s: float | None) -> Check:
    """Steps/s under `run` at most COST_SHARE below the same job bare (both from its clock)."""
    if bare_per_s is None or run_per_s is None:
        return _off("agent cost", job, "a rate is missing")
    cost = 1.0 - run_per_s / bare_per_s
    figure = f"bare {bare_per_s:.3f} steps/s, under run {run_per_s:.3f}: cost {cost:+.1%}"
    return Check("agent cost", job, cost <= COST_SHARE, figure + f" (limit {COST_SHARE:.0%})")


def precision_trial(job: str, report: Mapping[str, Any] | None, min_speedup: float) -> Check:
    """tune's precision trial: measured speedup, its prediction, kept exactly when faster."""
    trials = list((report or {}).get("trials") or [])
    if not trials:
        return _off("tune precision", job, "tune ran no trial")
    shown, ok = [], True
    for trial in trials:
        knobs = ",".join(str(f.get("knob")) for f in trial.get("fixes") or [])
        speedup, kept = trial.get("speedup"), bool(trial.get("kept"))
        predicted = trial.get("predicted_gain")
        shown.append(f"{knobs}: {_x(speedup)} (predicted {_x(predicted)}), kept {kept}")
        if speedup is not None and kept != (speedup > 1.0):
            ok = False
    best = max((float(t.get("speedup") or 0.0) for t in trials if t.get("kept")), default=0.0)
    ok = ok and best >= min_speedup
    return Check("tune precision", job, ok, "; ".join(shown) + f" (want a kept >= {min_speedup}x)")


def _x(value: object) -> str:
    return f"{value:.2f}x" if isinstance(value, int | float) else "none"


def same_class(
    job: str, attached: Mapping[str, Any] | None, run: Mapping[str, Any] | None
) -> Check:
    """attach (stacks only) names the class run named for the same job."""
    if attached is None or run is None:
        return _off("attach class", job, "attach or run gave no report")
    ours, truth = attached.get("bottleneck"), run.get("bottleneck")
    return Check("attach class", job, ours == truth, f"attach says {ours}, run says {truth}")


def compile_steps(job: str, report: Mapping[str, Any] | None, steady_per_s: float | None) -> Check:
    """Under torch.compile: steps are found, and their mean is the job's steady step (the
    compile's first steps stay out of the figures)."""
    steps = (report or {}).get("steps") or {}
    count, mean_ms = steps.get("count"), steps.get("mean_ms")
    if not count or mean_ms is None or not steady_per_s:
        return Check("compile steps", job, False if report else None, f"steps {steps or 'none'}")
    steady_ms = 1000.0 / steady_per_s
    gap = abs(mean_ms - steady_ms) / steady_ms
    figure = (
        f"{count} steps, mean {mean_ms:.1f} ms vs the job's steady {steady_ms:.1f} ms: "
        f"off by {gap:.1%} (limit {COMPILE_STEP_SHARE:.0%})"
    )
    return Check("compile steps", job, gap <= COMPILE_STEP_SHARE, figure)


# The Devices panel's GPU lines (torchtop.tui.widgets.gpu): detailed, ` util <plot> 63%` and
# ` mem <plot> 42.3 GB / 85.5 GB`; compact (a short panel), one line per device,
# `GPU0 <plot> 63% SM 1980MHz 42.3 GB/85.5 GB 412W`.
_UTIL = re.compile(r"^\s*(?:util\b.*?|GPU\d+\b.*?)(\d+)%(?:\s*$| SM )")
_MEMORY = re.compile(r"(?:^\s*mem\b.*?|MHz )([0-9.]+) (GB|MB|kB) ?/ ?([0-9.]+) (GB|MB|kB)")
_SCALE = {"GB": 1e9, "MB": 1e6, "kB": 1e3}
PANEL_MEMORY_ROUNDING_BYTES = 0.05e9


def parse_panel(text: str) -> tuple[float | None, float | None]:
    """The utilisation (%) and used memory (bytes) the Devices panel's GPU lines show, detailed
    or compact; None for what it does not show."""
    utilization = used = None
    for line in text.splitlines():
        util_match, memory_match = _UTIL.match(line), _MEMORY.search(line)
        if util_match is not None and utilization is None:
            utilization = float(util_match[1])
        if memory_match is not None and used is None:
            used = float(memory_match[1]) * _SCALE[memory_match[2]]
    return utilization, used


def panel_shows(job: str, text: str | None, name: str | None, smi_util_pct: float | None,
                smi_memory_mib: float | None) -> Check:  # fmt: skip
    """The live dashboard's Devices panel shows the device's name, and its utilisation and
    memory agree with nvidia-smi's readings of the same seconds."""
    if text is None:
        return _off("dashboard GPU panel", job, "the dashboard was not rendered")
    utilization, used = parse_panel(text)
    shown = name is not None and name != "" and name in text
    ok = shown and utilization is not None and used is not None
    figure = f"name {name!r} {'shown' if shown else 'missing'}"
    if utilization is not None and smi_util_pct is not None:
        ok = ok and abs(utilization - smi_util_pct) <= UTILIZATION_POINTS
        figure += f"; util {utilization:.0f}% vs nvidia-smi {smi_util_pct:.0f}%"
    if used is not None and smi_memory_mib is not None:
        truth = smi_memory_mib * 2**20
        ok = ok and abs(used - truth) <= truth * MEMORY_SHARE + PANEL_MEMORY_ROUNDING_BYTES
        figure += f"; memory {used / 1e9:.2f} GB vs nvidia-smi {truth / 1e9:.2f} GB"
    if utilization is None or used is None:
        figure += "; panel: " + " | ".join(line.strip() for line in text.splitlines()[:3])
    return Check("dashboard GPU panel", job, ok, figure)


def tally(checks: Sequence[Check]) -> dict[str, int]:
    return {
        "passed": sum(c.passed is True for c in checks),
        "failed": sum(c.passed is False for c in checks),
        "not_measured": sum(c.passed is None for c in checks),
    }
