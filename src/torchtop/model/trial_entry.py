"""A trial as the report and `RUN/trials/NN.json` give it: msgspec Structs, in the JSON's order.

`Report.trials` holds these rather than JSON dicts, so the text report reads typed fields and
the JSON comes from one place (`msgspec.to_builtins`, fields in declaration order: the order
the entries have always had). A field with a default is left out of the JSON when it holds it
(`omit_defaults`): `measured_as`, `since_relaunch` and `reverted` appear only where a trial has
them, and a run's `step_wall_s` only in `NN.json`. `trials.trial.trial_entry` makes them.
Two of them are the run folder's too (`runs.records` uses them, never a copy): `FixEntry` in
`run.json` and `reverts.jsonl`, `SinceRelaunch` in `reverts.jsonl`.
"""

from __future__ import annotations

import msgspec

from torchtop.model.diff import Document


class Entry(msgspec.Struct, frozen=True, omit_defaults=True):
    """The base of the trial shapes: frozen, defaults left out of the JSON."""


class FixEntry(Entry, frozen=True, forbid_unknown_fields=True):
    """The contract's fix shape: the report's, and the run folder's (`run.json`, `reverts.jsonl`),
    whose decoder drops and counts a field it does not know (so it must be told to forbid them)."""

    knob: str
    value: object
    apply: str
    description: str


class WarmupEntry(Entry, frozen=True):
    steps: int
    queued_batches: int
    ended_by: str
    duration_s: float


class RunEntry(Entry, frozen=True):
    """One measured launch of a trial."""

    run_dir: str
    steps: int
    warmup_steps: int
    steps_per_s: float
    median_step_ms: float
    mad_step_ms: float
    duration_s: float
    warmup: WarmupEntry | None
    step_wall_s: tuple[float, ...] | None = None
    """Every measured step's wall time: in `NN.json`, not in the report."""
    other_cores: float | None = None
    """Cores other processes used during the run, on average (absent: not measured)."""


class TrialRuns(Entry, frozen=True):
    before: tuple[RunEntry, ...]
    after: tuple[RunEntry, ...]


class MeasuredAs(Entry, frozen=True):
    """The rule every run of the trial was measured by (`trials.warmup.Span`)."""

    steps: int
    warmup_steps: int
    min_duration_s: float
    settle_steps: int
    settle_tolerance: float
    max_warmup_steps: int
    max_warmup_s: float


class SinceRelaunch(Entry, frozen=True, forbid_unknown_fields=True):
    """The relaunched job with a kept fix against its trial (`Holding`), when last checked: in
    the report's entry, and in `reverts.jsonl` as the figures the user reverted on."""

    steps: int
    duration_s: float
    steps_per_s: float | None
    speedup: float | None
    holds: bool | None
    reason: str
    recent_steps: int
    recent_steps_per_s: float | None
    p_value: float | None
    margin: float | None
    checked_at: str
    gain_gone: bool | None = None
    """The job runs back at (within `margin` of) its rate before the fix: revert it."""


class IntervalEntry(Entry, frozen=True):
    """The interval of a trial's speedup over its rounds, as every surface states it."""

    low: float
    high: float
    confidence: float
    text: str
    """`99% interval 0.57-17.81x`."""


class Reverted(Entry, frozen=True):
    """The user took the kept fix back: when, and the jobs without it and with it."""

    at: str
    run_dir: str
    from_run_dir: str


class TrialEntry(Entry, frozen=True):
    """One entry of the report's `trials`. `report.contract` puts the contract's five keys
    (`fixes`, `baseline_steps_per_s`, `trial_steps_per_s`, `speedup`, `kept`) first."""

    fixes: tuple[FixEntry, ...]
    baseline_steps_per_s: float | None
    """None only for a trial cancelled before its first run was measured."""
    trial_steps_per_s: float | None
    speedup: float | None
    predicted_gain: float | None
    kept: bool
    number: int
    reason: str
    p_value: float | None
    """The t-test over the rounds that the change does nothing (was: Mann-Whitney over steps)."""
    rounds: int
    baseline_median_step_ms: float | None
    trial_median_step_ms: float | None
    changes: tuple[str, ...]
    command_before: tuple[str, ...]
    command_after: tuple[str, ...]
    env_changes: tuple[str, ...]
    overrides: tuple[str, ...]
    runs: TrialRuns
    duration_s: float
    measured_as: MeasuredAs | None = None
    since_relaunch: SinceRelaunch | None = None
    reverted: Reverted | None = None
    effect: str | None = None
    """What the rounds showed: `faster` (beyond noise: kept), `slower` (beyond noise) or
    `no measurable effect`; absent where a run failed."""
    round_ratios: tuple[float, ...] = ()
    """Each round's after rate over its before rate (adjacent runs); `speedup` is their
    geometric mean."""
    speedup_low: float | None = None
    """The interval of `speedup` over the rounds (Student's t on the log-ratios) at
    `confidence`; absent under two rounds."""
    speedup_high: float | None = None
    confidence: float | None = None
    cancelled: bool = False
    """The user cancelled the trial (`q`) before it decided: its measured fields hold what was
    measured by then (null where nothing was), `kept` is false;
    in `RUN/trials/NN-cancelled.json`."""
    outcome: str | None = None
    """The decision's outcome, named alike on every surface: `faster` (kept), `slower`,
    `no measurable effect` (the interval within the least gain) or `inconclusive` (reverted);
    `failed` where a run failed, `cancelled`; absent in entries written before it."""
    interval: IntervalEntry | None = None
    """The speedup's interval over the rounds (absent under two rounds)."""
    rounds_favouring: int | None = None
    """Rounds whose ratio was above 1 (absent: no round completed)."""
    more_rounds: int | None = None
    """Inconclusive: about this many more rounds would decide it at the spread measured."""
    decides_with: str | None = None
    """Inconclusive: what would decide it, in words."""
    load_change: str | None = None
    """The machine's other load moved under the runs: when, from and to how many cores."""


def entry_json(entry: Entry) -> Document:
    """The JSON object of an entry, arrays as lists (as JSON reads back); a fix value JSON
    cannot hold is written as its text."""
    document = _lists(msgspec.to_builtins(entry, enc_hook=str))
    assert isinstance(document, dict)
    return document


def _lists(value: object) -> object:
    if isinstance(value, dict):
        return {key: _lists(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_lists(item) for item in value]
    return value
