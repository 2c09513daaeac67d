"""Hysteresis: a new verdict must hold for a few updates before it is shown."""

from __future__ import annotations

from torchtop.assess.tracker import VerdictTracker
from torchtop.model.findings import Verdict


def verdict(name: str, confidence: float = 0.8) -> Verdict:
    return Verdict(name, confidence, {}, f"{name} leads")


def test_a_new_verdict_is_shown_only_after_it_held_for_the_hold_count() -> None:
    tracker = VerdictTracker(hold=3)
    shown = [tracker.update(verdict("dataloader")).bottleneck for _ in range(4)]
    assert shown == ["unknown", "unknown", "dataloader", "dataloader"]


def test_a_one_update_blip_does_not_change_the_shown_verdict() -> None:
    tracker = VerdictTracker(hold=2)
    for _ in range(3):
        tracker.update(verdict("dataloader"))
    assert tracker.update(verdict("cpu")).bottleneck == "dataloader"
    assert tracker.update(verdict("dataloader")).bottleneck == "dataloader"
    assert tracker.update(verdict("cpu")).bottleneck == "dataloader", "the streak restarted"


def test_alternating_candidates_never_win_over_the_shown_verdict() -> None:
    tracker = VerdictTracker(hold=2)
    for _ in range(2):
        tracker.update(verdict("gpu"))
    for name in ["cpu", "memcpy", "cpu", "memcpy"]:
        assert tracker.update(verdict(name)).bottleneck == "gpu"


def test_the_shown_verdict_takes_fresh_numbers_while_it_holds() -> None:
    tracker = VerdictTracker(hold=1)
    tracker.update(verdict("gpu", 0.5))
    assert tracker.update(verdict("gpu", 0.9)).confidence == 0.9
