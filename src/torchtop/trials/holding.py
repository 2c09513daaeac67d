"""Does a kept fix still pay? The relaunched job's steps held against the trial that kept it.

A trial measures a fix for a minute; the job then runs with it for hours, and what the trial
saw can stop being true (another job lands on the machine, the input pipeline drains the queue
it had filled, an epoch boundary restarts the DataLoader's workers). So after a kept fix the
relaunched job's own steps are compared with the trial's "after" runs, and the user is told
when the fix no longer pays what the trial said.

The figure shown is the whole relaunch: steady-state steps (after the same warm-up as the
trial's runs, profiler windows left out: the trial's runs had none) over their summed time.
The judgement is on the most recent steps only: a fix that stops paying halfway would take as
long again to show in the whole-relaunch figure. A *span* is the newest steps that fill
`recent_steps` steps and `recent_s` seconds; the fix *falls short* when, over each of the two
newest spans (back to back, no step in both),

1. its rate is below the trial's pooled "after" rate by more than `margin`: `min_margin`
   below the pooled rate, or below the trial's slowest "after" run where its runs differed
   (two variants measured a minute apart have differed by 25% on this machine, see
   `trials.trial`): what the trial itself saw at its slowest is not a shortfall. It was the
   runs' spread (max - min over their mean), which has no bound: runs of 31 and 9 steps/s
   spread 112%, and "holds" was said of a job 69% below its trial. `min_margin` is 15%, the
   issue's own bar
   for a trial's claim to count as honest; the relaunched job pays for what the trial's runs
   did not (the collectors, the dashboard's own ticks and trace analysis on the same cores):
   a planted starved job at 185 steps/s in its trial ran at 163 under the dashboard, 12% less,
   its own printed rate agreeing), and
2. its step times are slower than the trial's "after" step times beyond noise: Mann-Whitney's
   U at `alpha` (the trial's own test and alpha), so a burst of slow batches that leaves the
   typical step alone is not a shortfall.

The fix's *gain has gone* when, over both spans, the job runs slower than the trial's "after"
steps beyond noise and within `min_margin` of the trial's "before" rate: it is back where it was
before the fix, whatever the trial's spread allows (a kept
`OMP_PROC_BIND=close` measured 1.53x in its trial read 1.09x since relaunch, back at the
pre-trial rate). The dashboard then offers the revert (`r`) and says why; it never restarts the
user's job on its own.

Both must hold: the rank test alone flags a 3% drift over thousands of steps, the margin alone
flags a bursty pipeline whose last seconds happened to hold one more slow batch. And both spans
must fall short: the check runs every second for hours against one trial sample, and a lone
span falls short by chance now and then (in noise with no shortfall, 2 s spans of a 25 steps/s
job: 22 of 7,600 checks for one span, none for two; 10 s spans, the default: none of 17,100), while
a real shortfall lasts. The price is the delay: a fix that stops paying is named once two spans
of slow steps were seen. Until two spans were
recorded there is no judgement (`holds` is None), never a guess. The words are
`model.rounds.holding_words`: "holds", "no longer holds", the same on every surface.
Pure: step times and the trial's numbers in, a `Holding` (`model.trials`: the dashboard shows
it) out; `trials.tracked` feeds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from torchtop.model.rounds import GAIN_GONE, HOLDS, NO_LONGER_HOLDS
from torchtop.model.trials import Holding, steps_per_s
from torchtop.trials.stats import mann_whitney_p


@dataclass(frozen=True)
class HoldingTest:
    """When the relaunched job is judged, and how far short counts as falling short."""

    warmup_steps: int = 8
    """Steps left out at the start of the relaunched job (the trial's warm-up, at least)."""
    recent_steps: int = 30
    recent_s: float = 10.0
    """A judged span: the newest steps that fill both this many steps and seconds."""
    alpha: float = 0.01
    min_margin: float = 0.15


@dataclass(frozen=True)
class TrialClaim:
    """What the trial measured for the fix: the rate before, and each "after" run's steps."""

    baseline_steps_per_s: float
    after_runs_wall_s: tuple[tuple[float, ...], ...]
    stated_speedup: float | None = None
    """The speedup the trial stated (its rounds' geometric mean); None: the pooled rates'."""

    @property
    def after_wall_s(self) -> tuple[float, ...]:
        return tuple(s for run in self.after_runs_wall_s for s in run)

    @property
    def after_steps_per_s(self) -> float | None:
        return steps_per_s(self.after_wall_s)

    @property
    def speedup(self) -> float | None:
        """The trial's own figure, so the dashboard says one number for one claim."""
        if self.stated_speedup is not None:
            return self.stated_speedup
        after = self.after_steps_per_s
        if after is None or self.baseline_steps_per_s <= 0:
            return None
        return after / self.baseline_steps_per_s

    @property
    def spread(self) -> float:
        """(max - min) / mean of the "after" runs' rates; 0 with one run."""
        rates = [r for r in (steps_per_s(run) for run in self.after_runs_wall_s) if r is not None]
        if len(rates) < 2:
            return 0.0
        return (max(rates) - min(rates)) / (sum(rates) / len(rates))

    def allowed_shortfall(self, min_margin: float) -> float:
        """How far below the pooled "after" rate a relaunch may run and still hold: `min_margin`
        below the slowest "after" run (the pooled rate itself with one run), as a share."""
        pooled = self.after_steps_per_s
        rates = [r for r in (steps_per_s(run) for run in self.after_runs_wall_s) if r is not None]
        if pooled is None or len(rates) < 2 or min(rates) >= pooled:
            return min_margin
        return 1.0 - min(rates) / pooled * (1.0 - min_margin)


def check_holding(
    walls_s: Sequence[float],
    claim: TrialClaim,
    test: HoldingTest,
    whole: tuple[int, float] | None = None,
    was_short: bool = False,
) -> Holding:
    """Judge the relaunched job's steady-state step times (oldest first) against `claim`.

    `whole`: (steps, seconds) of the whole relaunch, where `walls_s` holds only the newest
    steps (a bounded buffer); by default `walls_s` is the whole relaunch. `was_short`: the
    previous judgement found the job short; it then holds again only once its newest span is
    back within the margin (a profiler window's steps, left out when its record arrives, can
    otherwise pull a fast span from before the slowdown into the pair and clear the warning
    while the job is still slow)."""
    steps, duration_s = whole if whole is not None else (len(walls_s), sum(walls_s))
    rate = steps / duration_s if steps and duration_s > 0 else None
    base = claim.baseline_steps_per_s
    head = Holding(
        steps=steps,
        duration_s=duration_s,
        steps_per_s=rate,
        speedup=rate / base if rate is not None and base > 0 else None,
        claimed_speedup=claim.speedup,
        claimed_steps_per_s=claim.after_steps_per_s,
        holds=None,
        reason="",
    )
    spans = _spans(walls_s, test)
    claimed = claim.after_steps_per_s
    if spans is None or claimed is None:
        return _too_few(head, test)
    margin = claim.allowed_shortfall(test.min_margin)
    judged = [_judge(span, claim.after_wall_s, claimed) for span in spans]
    both = all(below > margin and p < test.alpha for _, below, p in judged)
    short = both or (was_short and judged[0][1] > margin)
    # Back at the rate before the fix, beyond noise: gone, however wide the trial's runs were.
    gone = all(r < base * (1.0 + test.min_margin) and p < test.alpha for r, _, p in judged)
    rate, below, p_value = judged[0]
    said = (
        f"the last {len(spans[0])} steps ran at {rate:.2f} steps/s, "
        f"{_below(below)} the trial's {claimed:.2f}"
    )
    if gone:
        why = (
            f"{NO_LONGER_HOLDS}: {GAIN_GONE}: {said}, within {test.min_margin:.0%} of the "
            f"{base:.2f} before it, as did the {len(spans[1])} before"
        )
    elif both:
        why = f"{NO_LONGER_HOLDS}: {said}, as did the {len(spans[1])} before"
    elif short:
        why = f"{NO_LONGER_HOLDS} (as at the last check): {said}"
    else:
        why = f"{HOLDS}: {said}"
    failing = short or gone
    return replace(
        head,
        holds=not failing,
        gain_gone=gone,
        reason=f"{why} ({_allowed(margin, test.min_margin)}; p={p_value:.2g})",
        recent_steps=len(spans[0]),
        recent_steps_per_s=rate,
        p_value=max(p for _, _, p in judged) if failing else p_value,
        margin=margin,
    )


def _allowed(margin: float, min_margin: float) -> str:
    """`15% below it is allowed`, and where the trial's slowest run set it, so."""
    if margin > min_margin:
        return f"{margin:.0%} below it is allowed: its slowest run, less {min_margin:.0%}"
    return f"{margin:.0%} below it is allowed"


def _judge(
    span: Sequence[float], after_s: Sequence[float], claimed: float
) -> tuple[float, float, float]:
    """(steps/s, share below the trial's rate, Mann-Whitney p against the trial's steps)."""
    rate = _rate(span)
    return rate, 1.0 - rate / claimed, mann_whitney_p(span, after_s)


def _rate(span: Sequence[float]) -> float:
    return len(span) / sum(span)


def _spans(walls_s: Sequence[float], test: HoldingTest) -> list[list[float]] | None:
    """The two newest spans, newest first; None until both were recorded."""
    spans: list[list[float]] = []
    end = len(walls_s)
    while len(spans) < 2:
        total, start = 0.0, end
        while start > 0 and not (end - start >= test.recent_steps and total >= test.recent_s):
            start -= 1
            total += walls_s[start]
        if end - start < test.recent_steps or total < test.recent_s:
            return None
        spans.append(list(walls_s[start:end]))
        end = start
    return spans


def _too_few(head: Holding, test: HoldingTest) -> Holding:
    reason = (
        f"not judged yet: {head.steps} steady-state steps over {head.duration_s:.1f} s; two "
        f"spans of {test.recent_steps} steps and {test.recent_s:g} s each are judged"
    )
    return replace(head, reason=reason)


def _below(share: float) -> str:
    return f"{share:.0%} below" if share >= 0 else f"{-share:.0%} above"
