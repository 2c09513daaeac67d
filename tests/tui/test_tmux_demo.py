"""A new user's `torchtop demo` in a real terminal: tmux runs it, the test reads the screen
(`tmux capture-pane -p`) and presses keys (`tmux send-keys`) as the user would.

It shows the verdict, `a` then `y` applies the fix and the trial panel follows the trial to its
result, the dashboard is still there after more than 30 s (it once closed by itself), and `q`
ends it: exit status 0, every job it started stopped, the run folder complete. `view`, where
nothing can be applied, does not offer `a`, and pressed it says why and what to run instead.
Where tmux is not installed these tests say so and skip (.ci/run installs it where apt-get can).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.conftest import CLEANS_UP

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tmux") is None,
        reason="tmux is not installed (apt-get install -y tmux; .ci/run installs it)",
    ),
]

COLUMNS, ROWS = 120, 36
POLL_S = 0.5
CLOCK = re.compile(r"running (\d+):(\d\d) · q ends it")
STAYS_S = 35.0
"""Longer than the 30 s after which the demo's dashboard used to close by itself."""
TERMINALS = itertools.count()
"""Numbers each terminal a test opens, for a tmux server name of its own."""


@dataclass
class Terminal:
    socket: str
    status: Path
    started_s: float

    def tmux(self, *args: str) -> str:
        command = ["tmux", "-L", self.socket, *args]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "demo")

    def press(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "demo", *keys)

    def resize(self, columns: int, rows: int) -> None:
        self.tmux("resize-window", "-t", "demo", "-x", str(columns), "-y", str(rows))

    def wait_for(self, what: str, test: Callable[[str], bool], timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.status.exists():
                pytest.fail(f"torchtop ended waiting for {what}:\n{self.screen()}")
            shown = self.screen()
            if test(shown):
                return shown
            time.sleep(POLL_S)
        pytest.fail(f"no {what} within {timeout_s:.0f} s; the screen:\n{self.screen()}")

    def clock_s(self, shown: str) -> int:
        found = CLOCK.search(shown.splitlines()[-1])
        assert found, f"the footer has no clock: {shown.splitlines()[-1]!r}"
        return int(found[1]) * 60 + int(found[2])


def started_pids(run_dir: Path) -> list[int]:
    """The job torchtop started and each relaunch of it, from the run folder's records."""
    records = [run_dir / "run.json", *sorted((run_dir / "jobs").glob("*/run.json"))]
    return [json.loads(p.read_text())["pid"] for p in records if p.exists()]


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def open_terminal(tmp_path: Path, *args: str, size: tuple[int, int] = (COLUMNS, ROWS)) -> Terminal:
    """`torchtop ARGS` in a new tmux session of its own server, run from `tmp_path`."""
    status = tmp_path / "status"
    torchtop = shlex.join([sys.executable, "-m", "torchtop", *args])
    # The shell stays after torchtop so its exit status can be read, as a user's prompt would.
    shell = f"cd {shlex.quote(str(tmp_path))}; {torchtop}; echo $? > {shlex.quote(str(status))}; "
    shell += "sleep 600"
    # A server of its own for each terminal: one test's server, killed, may still be going
    # away when the next test of the same worker starts, and a new session on its socket fails.
    socket = f"torchtop-test-{os.getpid()}-{next(TERMINALS)}-{args[0]}"
    new = ["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "demo"]
    # A terminal's own size, not the COLUMNS and LINES that pytest sets for its output.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    started = subprocess.run(
        [*new, "-x", str(size[0]), "-y", str(size[1]), shell],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert started.returncode == 0, f"tmux new-session failed: {started.stderr.strip()}"
    return Terminal(socket, status, time.monotonic())


def close(terminal: Terminal) -> None:
    subprocess.run(["tmux", "-L", terminal.socket, "kill-server"], check=False)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    opened = open_terminal(tmp_path, "demo", "--run-dir", str(tmp_path / "run"))
    try:
        yield opened
    finally:
        close(opened)
        for pid in started_pids(tmp_path / "run"):  # a failed test leaves no job behind
            stop_tree(pid)


def stop_tree(pid: int) -> None:
    with contextlib.suppress(psutil.NoSuchProcess):
        job = psutil.Process(pid)
        for process in [*job.children(recursive=True), job]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


def test_a_new_users_demo_shows_the_verdict_tries_the_fix_and_ends_only_on_q(
    terminal: Terminal, tmp_path: Path
) -> None:
    shown = terminal.wait_for(
        "dataloader verdict with its fix",
        lambda s: "DATALOADER" in s and "dataloader.num_workers" in s,
        180,
    )
    first_s, first_clock = time.monotonic(), terminal.clock_s(shown)
    assert "a Apply" in shown.splitlines()[-1]

    terminal.press("a")
    terminal.wait_for("the apply modal", lambda s: "Apply · dataloader.num_workers" in s, 60)
    terminal.press("y")
    terminal.wait_for("the trial running", lambda s: "Trial · running" in s, 60)
    shown = terminal.wait_for(
        "the trial's result", lambda s: bool(re.search(r"Trial · [a-z ]+: (kept|reverted)", s)), 400
    )
    trial = json.loads((tmp_path / "run" / "trials" / "01.json").read_text())
    assert "Trial · faster: kept" in shown, shown
    # The claim with its interval over the rounds, which may wrap at the panel's edge.
    flat = " ".join(re.sub("[│┃╭╮╰╯]", " ", shown).split())
    assert f"kept: measured {trial['speedup']:.2f}x (99% interval" in flat, shown
    # A note of the machine's other load moving under a round may stand between the two.
    assert f"{trial['rounds']} rounds);" in flat, shown
    assert "the job now runs with the fix" in flat, shown

    while time.monotonic() - terminal.started_s < STAYS_S:
        time.sleep(POLL_S)
    shown = terminal.screen()
    assert not terminal.status.exists() and "LIVE" in shown.splitlines()[0]
    # The footer's clock went on, and never ahead of ours (its seconds are whole).
    counted = terminal.clock_s(shown) - first_clock
    assert 0 < counted <= time.monotonic() - first_s + 1

    pids = started_pids(tmp_path / "run")
    assert len(pids) == 2 and running(pids[-1])  # the job, relaunched with the fix
    terminal.press("q")
    deadline = time.monotonic() + 60
    while not terminal.status.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert terminal.status.read_text().strip() == "0"
    assert not any(running(pid) for pid in pids)
    run_dir = tmp_path / "run"
    report = json.loads((run_dir / "report.json").read_text())
    # The report is of the job as it ran at the end (relaunched with the fix), with the trial.
    assert report["source"]["kind"] == "demo"
    assert [entry["kept"] for entry in report["trials"]] == [True]
    assert json.loads((run_dir / "jobs" / "01" / "exit.json").read_text())["how"] == "stopped"


def test_in_view_a_says_on_screen_why_nothing_applies_and_q_ends_it(tmp_path: Path) -> None:
    trace = Path(__file__).resolve().parents[2] / "sample_traces" / "dataloader_starved"
    terminal = open_terminal(tmp_path, "view", str(trace))
    try:
        shown = terminal.wait_for("the offline verdict", lambda s: "DATALOADER" in s, 120)
        assert "OFFLINE" in shown.splitlines()[0]
        assert "Apply" not in shown.splitlines()[-1]  # the footer does not offer `a`
        terminal.press("a")
        shown = terminal.wait_for("the notice", lambda s: "Nothing to apply here" in s, 30)
        assert "torchtop run -- python train.py" in shown.replace("\n", " ")
        terminal.press("q")
        deadline = time.monotonic() + 60
        while not terminal.status.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert terminal.status.read_text().strip() == "0"
    finally:
        close(terminal)


def test_a_sigterm_ends_the_dashboard_as_q_does_and_gives_the_terminal_back(
    tmp_path: Path,
) -> None:
    """`kill`, or a scheduler's stop, of torchtop under its dashboard: the job is stopped with its
    cleanup, the report is written and printed on a terminal out of the dashboard's screen."""
    run_dir, done = tmp_path / "run", tmp_path / "done"
    job = [sys.executable, str(CLEANS_UP), str(done)]
    terminal = open_terminal(tmp_path, "run", "--run-dir", str(run_dir), "--", *job)
    try:
        terminal.wait_for("the dashboard", lambda s: "Verdict" in s and "Quit" in s, 120)
        # A process gone or out of reach as it is listed has no command line (None).
        (torchtop,) = [
            process
            for process in psutil.process_iter(["cmdline"])
            if (words := process.info["cmdline"] or [])[1:4] == ["-m", "torchtop", "run"]
            and str(run_dir) in words
        ]
        torchtop.terminate()
        deadline = time.monotonic() + 60
        while not terminal.status.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert terminal.status.read_text().strip() == "0", terminal.screen()
        assert done.read_text() == "cleaned up"
        assert json.loads((run_dir / "report.json").read_text())["exit"]["how"] == "stopped"
        shown = terminal.screen()
        assert "the job stopped (SIGINT)" in shown and "Verdict ─" not in shown
    finally:
        close(terminal)
        for pid in started_pids(run_dir):
            stop_tree(pid)
