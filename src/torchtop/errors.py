"""The one error type that reaches the user as a single line and exit status 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad input: the message names the input and says what is wrong, in one line."""

    def __init__(self, subject: str, problem: str) -> None:
        super().__init__(f"{subject}: {problem}")
        self.subject = subject
        self.problem = problem
