"""The demo's training job (`torchtop.demo.train`) on its own, without torchtop: it trains,
prints its own rate every 50 steps, and its planted storage latency bounds that rate."""

from __future__ import annotations

import re
import subprocess
import sys

RATE = re.compile(r"^step (\d+)  loss [\d.]+  ([\d.]+) steps/s$", re.MULTILINE)


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchtop.demo.train", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def test_the_demo_job_stops_after_its_steps_and_prints_its_rate_every_fifty() -> None:
    done = run_demo("--steps", "100", "--latency-ms", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert [int(step) for step, _ in RATE.findall(done.stdout)] == [50, 100]


def test_the_planted_latency_keeps_the_demo_below_one_batch_per_its_sleeps() -> None:
    # 8 samples a batch, each read after 5 ms in the loop's own process (num_workers 0): no
    # step can take less than 40 ms, so its own rate stays under 25 steps/s.
    done = run_demo("--steps", "50", "--batch-size", "8", "--latency-ms", "5")
    assert done.returncode == 0, done.stderr[-2000:]
    [(_, rate)] = RATE.findall(done.stdout)
    assert 0.0 < float(rate) <= 1 / (8 * 0.005)
