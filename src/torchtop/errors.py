"""The one error type that reaches the user as a single line and exit status 2."""

from __future__ import annotations

import math

EXIT_INTERRUPTED = 130
"""What a verb stopped by Ctrl-C (or a SIGTERM taken as one) exits with: 128 + SIGINT."""


class InputError(Exception):
    """Bad input: the message names the input and says what is wrong, in one line."""

    def __init__(self, subject: str, problem: str) -> None:
        super().__init__(f"{subject}: {problem}")
        self.subject = subject
        self.problem = problem


def positive_seconds(option: str, text: str) -> float:
    """A duration option's value (`--for 30`) as seconds; InputError unless positive and finite."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(option, f"{text!r} is not a positive number of seconds")
    return seconds


def percent(option: str, text: str) -> float:
    """A percentage option's value (`--sample-budget 2`) as a share; InputError unless it is
    above 0 and at most 100."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value <= 100:
        raise InputError(option, f"{text!r} is not a percentage above 0 and at most 100")
    return value / 100
