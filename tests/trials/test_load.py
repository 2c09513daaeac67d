"""The machine's other load during a trial's runs, and the note when it moved under them."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from torchtop.trials.load import LoadMeter, load_change

SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def test_a_steady_load_says_nothing() -> None:
    assert load_change([(1, 0.1), (1, 0.2), (2, 0.3), (2, 0.1)]) is None
    assert load_change([(1, None), (1, 1.5)]) is None  # one measured run: nothing to compare


def test_a_load_that_rose_says_from_what_to_what_and_in_which_round() -> None:
    said = load_change([(1, 0.1), (1, 0.2), (2, 0.1), (2, 0.3), (3, 1.9), (3, 1.8)])
    assert said == (
        "the machine's other load rose from 0.1 to 1.9 cores during round 3: "
        "the rounds may not compare"
    )
    fell = load_change([(1, 1.6), (1, 1.5), (2, 0.4)])
    assert fell is not None and fell.startswith("the machine's other load fell from 1.6 to 0.4")


def test_a_busy_process_counts_as_other_load_unless_it_is_the_jobs_own() -> None:
    # Not a child of this process (whose children are torchtop's own): the shell that started
    # it exits, so it is another tenant's.
    launched = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -c "$0" >/dev/null 2>&1 & echo $!', SPIN],
        capture_output=True,
        text=True,
        check=True,
    )
    spinner = psutil.Process(int(launched.stdout))
    try:
        meter = LoadMeter.start()
        time.sleep(2.0)
        # Read at the same moment: the two differ by the spinner's CPU.
        as_other = meter.other_cores(None)
        as_the_job = meter.other_cores(spinner.pid)
    finally:
        spinner.kill()
    assert as_other is not None and as_the_job is not None
    assert as_other >= 0.4, as_other  # a spinning core, shared with whatever else runs
    assert as_the_job <= as_other - 0.3, (as_the_job, as_other)
