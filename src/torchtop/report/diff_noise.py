"""Whether the step-time difference between A and B stands out of the runs' own spread.

Where both reports list their steps (`steps.per_step`: a trace's profiled steps, a run's newest
steps), the median step's difference is bootstrapped over those steps (seeded, so a diff says
the same each time) and called within noise when its 95% interval holds 0; the steps'
interquartile ranges are given beside it. Where only the summaries are there (an older report),
the means' difference is held against the spread the mean and `step_cv` give over the steps
counted, and the words say it was judged from summaries. Either way this is the spread of steps
within each run: one run each says nothing of how much two runs of the same settings differ
(the machine's load between them), and the words say that too.
"""

from __future__ import annotations

import math

import numpy as np

from torchtop.model.diff import Document

MIN_STEPS = 5
RESAMPLES = 2000
CONFIDENCE = 0.95
Z_95 = 1.96
SEED = 0
STEP_FIGURES = ("mean_ms", "step_cv", "count")
BETWEEN_RUNS = "one run each, so the variation between runs is not in it"


def noise_judgement(a: Document, b: Document) -> Document:
    steps_a, steps_b = _per_step_ms(a), _per_step_ms(b)
    if len(steps_a) >= MIN_STEPS and len(steps_b) >= MIN_STEPS:
        return bootstrap_judgement(steps_a, steps_b)
    return summary_judgement(a.get("steps") or {}, b.get("steps") or {}, a, b)


def bootstrap_judgement(steps_a: list[float], steps_b: list[float]) -> Document:
    """The median's change B minus A over the listed steps, with its bootstrap interval."""
    xa, xb = np.asarray(steps_a), np.asarray(steps_b)
    rng = np.random.default_rng(SEED)
    medians_a = np.median(rng.choice(xa, (RESAMPLES, len(xa))), axis=1)
    medians_b = np.median(rng.choice(xb, (RESAMPLES, len(xb))), axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(medians_b - medians_a, (tail, 100 - tail))
    change = float(np.median(xb) - np.median(xa))
    iqr_a, iqr_b = (float(np.subtract(*np.percentile(x, (75, 25)))) for x in (xa, xb))
    return _judged(
        "per-step times",
        "p50_change_ms",
        change,
        (float(low), float(high)),
        {"iqr_ms": {"a": round(iqr_a, 3), "b": round(iqr_b, 3)}},
        (len(xa), len(xb)),
    )


def summary_judgement(sa: Document, sb: Document, a: Document, b: Document) -> Document:
    """The means' change against a normal interval from each side's mean, cv and count."""
    raw = [
        (s.get("mean_ms"), (r.get("metrics") or {}).get("step_cv"), s.get("count"))
        for s, r in ((sa, a), (sb, b))
    ]
    figures = [tuple(x for x in f if isinstance(x, int | float) and x > 0) for f in raw]
    if any(len(f) < len(STEP_FIGURES) for f in figures):
        return {
            "judged": False,
            "why": "no per-step times, or no mean, spread (step_cv) and count, on both sides",
        }
    (mean_a, cv_a, n_a), (mean_b, cv_b, n_b) = figures
    half = Z_95 * math.hypot(mean_a * cv_a / math.sqrt(n_a), mean_b * cv_b / math.sqrt(n_b))
    change = mean_b - mean_a
    spread = {"sd_ms": {"a": round(mean_a * cv_a, 3), "b": round(mean_b * cv_b, 3)}}
    return _judged(
        "summaries",
        "mean_change_ms",
        change,
        (change - half, change + half),
        spread,
        (int(n_a), int(n_b)),
    )


def _judged(
    basis: str,
    key: str,
    change: float,
    interval: tuple[float, float],
    spread: Document,
    steps: tuple[int, int],
) -> Document:
    low, high = interval
    return {
        "judged": True,
        "basis": basis,
        "within_noise": low <= 0.0 <= high,
        key: round(change, 3),
        "interval_ms": [round(low, 3), round(high, 3)],
        "confidence": CONFIDENCE,
        **spread,
        "steps": {"a": steps[0], "b": steps[1]},
        "caveat": BETWEEN_RUNS,
    }


def _per_step_ms(report: Document) -> list[float]:
    steps = (report.get("steps") or {}).get("per_step") or []
    return [s["duration_ms"] for s in steps if isinstance(s.get("duration_ms"), int | float)]


def noise_words(noise: Document) -> str:
    """`beyond noise: p50 -12.8 ms (95% interval -13.0 to -12.6 ms over 30 and 30 steps; the
    steps' IQR 0.8 and 0.6 ms); one run each: ...`."""
    if not noise["judged"]:
        return f"noise not judged: {noise['why']}"
    verdict = "within noise" if noise["within_noise"] else "beyond noise"
    which, change = (
        ("p50", noise["p50_change_ms"])
        if "p50_change_ms" in noise
        else ("mean", noise["mean_change_ms"])
    )
    low, high = noise["interval_ms"]
    steps = noise["steps"]
    spread = noise.get("iqr_ms") or noise.get("sd_ms") or {}
    spread_name = "IQR" if "iqr_ms" in noise else "sd"
    return (
        f"{verdict}: {which} {change:+.2f} ms ({noise['confidence']:.0%} interval "
        f"{low:+.2f} to {high:+.2f} ms over {steps['a']} and {steps['b']} steps"
        f"{' (from summaries)' if noise['basis'] == 'summaries' else ''}; the steps' "
        f"{spread_name} {spread.get('a', 0):.2f} and {spread.get('b', 0):.2f} ms); "
        f"{noise['caveat']}"
    )
