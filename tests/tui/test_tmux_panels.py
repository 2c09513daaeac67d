"""Every panel reachable and readable, in a real terminal at 80x24 and then 120x36 (tmux).

`view` of real GPU traces (ResNet-50's DataLoader-bound step; DLRM's 8 ranks) and a live
`demo`: tab reaches every panel (its title gets `▸`), End shows each list's last row, `s`
sorts, `/` filters (the rows left all match; Esc brings the rest back); and on screen, uncut,
are the verdict's class with its share, each fix's knob with its value (as `analyze` reports
them), and the footer's keys. One terminal per program, resized between the two sizes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RESNET_NW0, analyze_json
from tests.tui.test_tmux_demo import (
    Terminal,
    close,
    open_terminal,
    pytestmark,  # noqa: F401 (slow, and skipped without tmux)
    started_pids,
    stop_tree,
)
from torchtop.model.findings import format_value

SIZES = ((80, 24), (120, 36))
FOCUSED = re.compile(r"▸ ([A-Za-z][A-Za-z ]*?)(?: \(| ─|  | *│|$)")
KEY_S = 15.0
"""How long a key's effect may take to show (two busy cores, other tests beside)."""


def focused(screen: str) -> list[str]:
    return FOCUSED.findall(screen)


def box(screen: str, title: str) -> list[str]:
    """The lines inside the box whose top border names `title` (focused or not)."""
    lines = screen.splitlines()
    for top, line in enumerate(lines):
        start = line.find(f"─ {title} ")
        if start < 0:
            start = line.find(f"─ ▸ {title} ")
        if start < 0:
            continue
        left = line.rfind("╭", 0, start)
        right = line.find("╮", start)
        inside = []
        for below in lines[top + 1 :]:
            if below[left : left + 1] != "│":
                break
            inside.append(below[left + 1 : right].strip(" │"))
        return inside
    return []


def joined(lines: list[str]) -> str:
    return re.sub(r"\s+", " ", " ".join(lines))


def verdict_words(report: dict[str, Any]) -> str:
    share = report["verdict"]["recoverable"][report["bottleneck"]]
    return f"{report['bottleneck'].upper()} · {share:.0%} recoverable"


def fix_changes(report: dict[str, Any]) -> list[str]:
    return [
        f"{fix['knob']} = {format_value(fix['value'])}"
        for finding in report["findings"]
        for fix in finding["fixes"]
    ]


def assert_fixes_shown(terminal: Terminal, changes: list[str]) -> None:
    """Down through the fix list (focused): each `knob = value` appears whole in the box."""
    seen = fix_text(terminal.screen())
    for _ in changes:
        before = terminal.screen()
        terminal.press("Down")
        deadline = time.monotonic() + 3.0
        while terminal.screen() == before and time.monotonic() < deadline:
            time.sleep(0.1)
        seen += " " + fix_text(terminal.screen())
    for change in changes:
        assert change in seen, f"{change!r} not on screen whole: {seen}"
    terminal.press("Home")


def fix_text(screen: str) -> str:
    """The fix list's lines joined, without its scrollbar (the right-hand column)."""
    return joined([line.rstrip("▁▂▃▄▅▆▇█ ") for line in box(screen, "Fixes")])


def footer(screen: str) -> str:
    return " ".join(screen.rstrip("\n").splitlines()[-2:])


def moved_from(before: list[str]) -> Callable[[str], bool]:
    return lambda screen: focused(screen) != before


def drawn_at(columns: int, also: str) -> Callable[[str], bool]:
    """The dashboard redrawn for `columns` (its header's state word at the right edge, no
    line wider), showing `also`."""

    def drawn(screen: str) -> bool:
        lines = screen.splitlines()
        edge = bool(lines) and len(lines[0].rstrip()) >= columns - 2
        keys = "q Quit" in footer(screen)
        return edge and keys and also in screen and all(len(line) <= columns for line in lines)

    return drawn


def visit_every_panel(terminal: Terminal, expected: set[str]) -> set[str]:
    """Tab round the panels; in each list: End, then sort, then filter and clear."""
    reached: set[str] = set()
    for _ in range(len(expected) + 4):
        before = focused(terminal.screen())
        terminal.press("Tab")
        shown = terminal.wait_for("the focus to move", moved_from(before), KEY_S)
        names = focused(shown)
        title = names[-1] if names else ""
        reached.update(names)
        if title in LISTS:
            use_list(terminal, title)
        elif title == "Step time" and "OFFLINE" in shown.splitlines()[0]:
            terminal.press("End")
            terminal.wait_for("the last step", lambda s: "step #" in s, KEY_S)
            terminal.press("a")
        if reached >= expected and title == "Fixes":
            break
    return reached


LISTS = {"Ranks", "Hot stacks", "kernels", "operators", "Nodes"}
FILTER_WORDS = {"Ranks": "cpu", "kernels": "void", "operators": "aten"}


def press_until(terminal: Terminal, key: str, test: Callable[[str], bool]) -> str:
    """`key` until `test` holds: live, a list may grow between the key and the next look."""
    deadline = time.monotonic() + KEY_S
    while time.monotonic() < deadline:
        terminal.press(key)
        for _ in range(10):
            shown = terminal.screen()
            if test(shown):
                return shown
            time.sleep(0.2)
    pytest.fail(f"{key} never showed what was expected:\n{terminal.screen()}")


def use_list(terminal: Terminal, title: str) -> None:
    """End shows the last row (the caption reads N/N), `s` sorts, `/` filters, Esc clears."""
    last = re.compile(r"\b(\d+)/\1\b")
    shown = press_until(terminal, "End", lambda s: bool(last.search(s)))
    if title == "Ranks":
        assert "rank 7" in joined(box(shown, "Ranks"))
    terminal.press("s")
    sorted_by = re.compile(r"\d+/\d+ · \w[\w ]* [↑↓]")
    terminal.wait_for("the sort", lambda s: bool(sorted_by.search(s)), KEY_S)
    word = FILTER_WORDS.get(title)
    if word is None:
        return
    terminal.press("/")
    terminal.wait_for("the filter input", lambda s: "Enter keeps, Esc clears" in s, KEY_S)
    terminal.press("-l", word)
    terminal.press("Enter")
    shown = terminal.wait_for("the filter kept", lambda s: f"/{word}" in s, KEY_S)
    if title == "Ranks":
        rows = [line for line in box(shown, "Ranks")[1:] if line]
        assert rows and all(word in line for line in rows), rows
    terminal.press("Escape")
    terminal.wait_for("the filter cleared", lambda s: f"/{word}" not in s, KEY_S)


def check_view(terminal: Terminal, report: dict[str, Any], panels: set[str]) -> None:
    for columns, rows in SIZES:
        terminal.resize(columns, rows)
        shown = terminal.wait_for(
            f"the verdict at {columns}x{rows}", drawn_at(columns, verdict_words(report)), 60
        )
        assert "OFFLINE" in shown.splitlines()[0]
        for key in ("⏎ Details", "tab Panel", "? Help", "q Quit"):
            assert key in footer(shown), footer(shown)
        assert_fixes_shown(terminal, fix_changes(report))
        reached = visit_every_panel(terminal, panels)
        assert panels <= reached, reached


def test_view_of_a_resnet_trace_reaches_every_panel_and_cuts_nothing_essential(
    tmp_path: Path, shared: Path
) -> None:
    trace = shared / RESNET_NW0
    terminal = open_terminal(tmp_path, "view", str(trace), size=SIZES[0])
    try:
        panels = {"Verdict", "Step time", "Fixes", "Top kernels and operators"}
        check_view(terminal, analyze_json(trace), panels)
    finally:
        close(terminal)


def test_view_of_8_ranks_reaches_rank_7_and_every_panel_at_both_sizes(
    tmp_path: Path, shared: Path
) -> None:
    folder = shared / "param" / "dlrm_kineto"
    terminal = open_terminal(tmp_path, "view", str(folder), size=SIZES[0])
    try:
        panels = {"Verdict", "Step time", "Fixes", "Top kernels and operators", "Ranks"}
        check_view(terminal, analyze_json(folder), panels)
    finally:
        close(terminal)


def test_the_live_demo_reaches_every_panel_and_keeps_its_keys_at_both_sizes(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    terminal = open_terminal(tmp_path, "demo", "--run-dir", str(run), size=SIZES[0])
    try:
        shown = terminal.wait_for(
            "the dataloader verdict and its fix",
            lambda s: "DATALOADER · " in s and "dataloader.num_workers = " in s,
            240,
        )
        for columns, rows in SIZES:
            terminal.resize(columns, rows)
            shown = terminal.wait_for(
                f"the dashboard at {columns}x{rows}", drawn_at(columns, "LIVE"), 60
            )
            assert re.search(r"DATALOADER · \d+% recoverable", shown), shown
            # The knob, its value and the finding's one figure (`gain_short`), uncut.
            # The figure is on the same line or starts the next one, whole, never cut.
            assert re.search(r"dataloader\.num_workers = \d+", shown), shown
            gain = r"│ ?(?:.* )?(pred \d+\.\d\dx|almost all dataloader|no prediction) *│"
            assert re.search(gain, shown), shown
            # One row: at 80 columns the run clock gives way to the keys (the header's LIVE
            # and its uptime still say the job runs).
            clock = ("running",) if columns >= 120 else ()
            for key in ("tab Panel", "a Apply", "? Help", "q Quit", "p Pause", *clock):
                assert key in footer(shown), footer(shown)
            panels = {"Verdict", "Step time", "Fixes", "Devices", "Hot stacks"}
            reached = visit_every_panel(terminal, panels)
            assert panels <= reached, reached
        terminal.press("q")
        deadline = time.monotonic() + 60
        while not terminal.status.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert terminal.status.read_text().strip() == "0"
    finally:
        close(terminal)
        for pid in started_pids(run):
            stop_tree(pid)
