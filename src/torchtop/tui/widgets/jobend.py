"""How the job ended, under the panels: the dashboard of `run` stays once the job has ended.

Hidden while the job runs. When it has ended (and the dashboard stays until `q`), one line says
how, that the figures above are the final ones, and how to leave; when it failed, the line is in
the error colour and the last lines the job wrote to stderr follow (its traceback, or Python's
"can't open file ..."; for a job of several ranks, the first failed rank's own error), with the
file that holds its whole output, so the cause is on screen without leaving the dashboard.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from torchtop.model.report import JobExit
from torchtop.report.ending import shown_tail
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.folded import Reshaped

TAIL_SHOWN = 8
"""The last lines of stderr shown (the report keeps more)."""
FAILED_STYLE = "bold #ff5f5f"
ENDED_STYLE = "bold #9a9a9a"


def job_end_text(ending: JobExit, tail_shown: int = TAIL_SHOWN) -> Text:
    """`the job crashed with exit status 1 · its whole output: RUN/job.log · q: quit`, then the
    stderr tail where it failed: its last `tail_shown` lines (a traceback ends with its cause)."""
    head = ending.headline()
    if not ending.failed:
        return Text.assemble(
            (head, ENDED_STYLE), ("; the figures above are final · q: quit", MUTED)
        )
    text = Text(head, style=FAILED_STYLE)
    if ending.log is not None:
        what = "its stderr" if Path(ending.log).name == "stderr.log" else "its whole output"
        text.append(f" · {what}: {ending.log}", style=MUTED)
    text.append(" · q: quit", style=MUTED)
    for line in shown_tail(ending, TAIL_SHOWN)[-max(tail_shown, 1) :]:
        text.append(f"\n{line}")
    return text


class JobEndPanel(Static):
    DEFAULT_CSS = """
    JobEndPanel {
        display: none;
        height: auto;
        max-height: 11;
        padding: 0 1;
        border: round $error;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    JobEndPanel.-ended-well {
        border: round $primary;
    }
    """

    ending: reactive[JobExit | None] = reactive(None)
    rows: reactive[int] = reactive(TAIL_SHOWN + 1)
    """The lines it has room for (`tui.arrange`): fewer than its whole, it keeps the last."""

    def watch_ending(self, ending: JobExit | None) -> None:
        if ending is None:
            self.display = False
            return
        self.border_title = "Job failed" if ending.failed else "Job ended"
        self.set_class(not ending.failed, "-ended-well")
        self.update(job_end_text(ending, self.rows - 1))
        self.post_message(Reshaped())

    def watch_rows(self, rows: int) -> None:
        if self.ending is not None:
            self.update(job_end_text(self.ending, rows - 1))

    def whole_rows(self) -> int:
        """Its lines when all are shown (each one line: they are cut, not wrapped)."""
        ending = self.ending
        return 0 if ending is None else len(job_end_text(ending).plain.splitlines())
