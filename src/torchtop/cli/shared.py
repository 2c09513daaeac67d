"""What several verbs do the same way once their words parse: load the rule tree, read a
command given after `--`, tell whether stdout is a terminal, show a trace file's progress, and
warn of a damaged trace. Each imports what it needs when called: `analyze` starts fast."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torchtop.diagnosis.rules import RuleTree
    from torchtop.model.report import JobReports

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def load_tree(folder: str | None) -> RuleTree:
    from torchtop.api.analyzing import rule_tree

    return rule_tree(folder)


def after_dashes(words: list[str]) -> list[str]:
    return words[1:] if words and words[0] == "--" else list(words)


def on_a_terminal(verb: str) -> bool:
    """Whether stdout is a terminal the dashboard can draw on; where it is not (a file, a
    pipe), the verb runs headless, as `top -b` does, and says so on stderr."""
    if sys.stdout.isatty():
        return True
    what = "the report" if verb == "view" else "progress on stderr, the report"
    print(
        f"torchtop: stdout is not a terminal: {verb} runs headless ({what} on stdout)",
        file=sys.stderr,
    )
    return False


def warn_damaged(jobs: JobReports) -> None:
    """The reports carry these too; stderr makes sure a damaged or skipped file is never
    missed."""
    for skipped in jobs.skipped:
        print(f"torchtop: {skipped.note()}", file=sys.stderr)
    for report in jobs.reports:
        for info in report.job.infos:
            if info.truncated:
                print(f"torchtop: {info.path}: {info.truncation()}", file=sys.stderr)
            for line in info.set_aside():
                print(f"torchtop: {info.path}: {line}", file=sys.stderr)


@contextlib.contextmanager
def file_progress() -> Iterator[Callable[[Path], Callable[[int, int], None] | None]]:
    """A progress bar on stderr for each trace file that takes over a second to read (on a
    terminal): `analyze`'s, and `view`'s before its dashboard opens."""
    from torchtop.progress import FileProgress, progress_enabled

    bars: list[FileProgress] = []

    def progress(path: Path) -> FileProgress | None:
        for bar in bars:
            bar.close()
        bars.clear()
        if not progress_enabled():
            return None
        bars.append(FileProgress(path))
        return bars[-1]

    try:
        yield progress
    finally:
        for bar in bars:
            bar.close()
