"""What each colour and letter means, shared by every panel and by the help screen.

The step-time categories use the letters of the text report (`torchtop.report.text`), in its
order, and colours from the same ANSI families (kernels green, copies yellow, communication
magenta, CUDA runtime blue, DataLoader red, CPU cyan, nothing recorded grey), so the dashboard
and `analyze` agree. Colour is never the only signal: every category shows its letter, every
severity its word, every fix its route, so the dashboard stays readable under NO_COLOR.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Category:
    key: str
    """The breakdown's key (`RankAnalysis.breakdown`, `StepCost.parts_us`)."""
    letter: str
    label: str
    colour: str


CATEGORIES: tuple[Category, ...] = (
    Category("kernel", "K", "kernels", "#5fc75f"),
    Category("memcpy", "M", "memcpy", "#d7af00"),
    Category("memset", "S", "memset", "#af8700"),
    Category("communication", "N", "comm", "#c76ad7"),
    Category("runtime", "R", "runtime", "#5f87ff"),
    Category("dataloader", "D", "DataLoader", "#e05d5d"),
    Category("cpu_exec", "C", "CPU", "#2fb5b5"),
    Category("other", ".", "other", "#7a7a7a"),
)
CATEGORY = {c.key: c for c in CATEGORIES}

SEVERITY_COLOUR = {"high": "bold #ff5f5f", "medium": "#e0b000", "low": "#9a9a9a"}
SEVERITY_WORD = {"high": "HIGH", "medium": "MED", "low": "LOW"}
APPLY_COLOUR = {"override": "#5fc75f", "env": "#2fb5b5", "arg": "#5f87ff", "code": "#c76ad7"}
APPLY_MEANING = {
    "override": "the agent changes a library default inside the relaunched job",
    "env": "an environment variable set on relaunch",
    "arg": "one of the script's own command-line options, rewritten on relaunch",
    "code": "a change only you can make: shown as a patch, never applied for you",
}
VERDICT_COLOUR = {"unknown": "bold #e0b000"}
VERDICT_DEFAULT_COLOUR = "bold #5fc75f"
USER_CODE = "bold"
LIBRARY_CODE = "#8a8a8a"
MUTED = "#8a8a8a"
