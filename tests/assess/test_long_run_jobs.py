"""The long run on real jobs under `torchtop run --headless --report`: one job that keeps 1 MiB
more each step, saves a "checkpoint" (a 1 s sleep in `save_checkpoint()`) every 20th step and
runs its steps 30% slower from step 130; one steady job with random slow steps, the negative
for all three findings. Both run at once in a module fixture (they mostly sleep), ~30 s.

The truth is what the jobs planted and measured by their own clock: 1 MiB a step, a period of
20 steps, the share of the loop's time spent in `save_checkpoint()` (the job's account file).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS
from torchtop.cli import main
from torchtop.diagnosis.rules import load_rules
from torchtop.exporters.metrics import metric_name, snapshot_families
from torchtop.live.watch import LiveMonitor

pytestmark = pytest.mark.slow

MIB = 2**20
JOB = [sys.executable, str(WORKLOADS / "long_run.py")]
PLANTED = ["--steps", "200", "--step-s", "0.05", "--leak-mib", "1", "--stall-every", "20",
           "--stall-s", "1.0", "--slow-from", "130", "--slow-by", "0.3"]  # fmt: skip
# Steps of 0.1 s: a scheduler's delays on a loaded machine are a smaller part of them.
STEADY = ["--steps", "220", "--step-s", "0.1", "--random-p", "0.05", "--random-s", "0.4"]
LONG_RUN_RULES = {"memory-growth", "periodic-stall", "step-drift"}


class Ran:
    def __init__(self, folder: Path, report: dict[str, Any], account: dict[str, float]) -> None:
        self.folder, self.report, self.account = folder, report, account
        self.findings = {f["rule"]: f for f in report["findings"]}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    root = tmp_path_factory.mktemp("long-run")
    env = {**os.environ, "TORCHTOP_PROGRESS": "0"}
    started = {}
    for name, args in (("planted", PLANTED), ("steady", STEADY)):
        account = root / f"{name}-account.json"
        command = [sys.executable, "-m", "torchtop", "run", "--headless", "--for", "150",
                   "--run-dir", str(root / name), "--report", str(root / f"{name}.json"),
                   "--", *JOB, *args, "--account", str(account)]  # fmt: skip
        started[name] = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    ran = {}
    for name, process in started.items():
        assert process.wait(timeout=180) == 0, name
        report = json.loads((root / f"{name}.json").read_text())
        account = json.loads((root / f"{name}-account.json").read_text())
        ran[name] = Ran(root / name, report, account)
    return ran


def test_a_job_that_keeps_1_mib_a_step_gets_memory_growth_at_that_rate_in_its_file(
    jobs: dict[str, Ran],
) -> None:
    growth = jobs["planted"].findings["memory-growth"]
    assert growth["bytes_per_step"] == pytest.approx(MIB, rel=0.3)
    # The run's step rate times 3600 steps an hour: rate per hour from rate per step.
    rate = jobs["planted"].report["steps"]["steps_per_s"]
    assert growth["evidence"]["rss_growth_bytes_per_hour"] == pytest.approx(
        growth["bytes_per_step"] * rate * 3600, rel=0.05
    )
    assert "long_run.py" in growth["evidence"]["rss_growth_where"]
    assert growth["seconds_to_limit"] > 0  # free RAM at least is known on Linux
    assert "out of memory in ~" in growth["message"]
    (keep, *_) = growth["fixes"]
    assert keep["knob"] == "code.keep_numbers_not_tensors" and "long_run.py" in keep["where"]


def test_a_checkpoint_every_20_steps_is_a_periodic_stall_at_save_checkpoint(
    jobs: dict[str, Ran],
) -> None:
    planted = jobs["planted"]
    stall = planted.findings["periodic-stall"]
    assert stall["period_steps"] == 20
    truth = planted.account["stalled_s"] / planted.account["loop_s"]
    assert stall["share_lost"] == pytest.approx(truth, rel=0.2)
    assert stall["evidence"]["stall_cost_s"] == pytest.approx(1.0, rel=0.2)
    assert stall["evidence"]["stall_where"].startswith("save_checkpoint (")
    (fix,) = stall["fixes"]  # the checkpoint's advice alone
    assert fix["knob"] == "code.async_checkpoint"
    assert fix["where"].startswith("save_checkpoint (")


def test_steps_30_percent_slower_after_a_while_are_drift(jobs: dict[str, Ran]) -> None:
    drift = jobs["planted"].findings["step-drift"]
    # 30% longer steps: steps/s falls by 1 - 1/1.3 = 23%.
    assert drift["fall_share"] == pytest.approx(1 - 1 / 1.3, abs=0.08)
    assert 100 <= drift["evidence"]["drift_since_step"] <= 150


def test_a_steady_job_with_random_slow_steps_gets_no_long_run_finding(
    jobs: dict[str, Ran],
) -> None:
    steady = jobs["steady"]
    assert not LONG_RUN_RULES & set(steady.findings), steady.findings
    metrics = steady.report["metrics"]
    assert metrics["stall_period_steps"] is None
    assert metrics["rss_growth_bytes_per_step"] is None
    assert metrics["drift_fall_share"] is None


def test_the_report_timeline_covers_the_run_with_its_stalls_and_memory(
    jobs: dict[str, Ran],
) -> None:
    planted = jobs["planted"]
    buckets = planted.report["timeline"]["buckets"]
    steps = planted.report["steps"]["count"]
    assert sum(b["steps"] for b in buckets) == steps
    assert (
        sum(b["stalls"] for b in buckets)
        == planted.findings["periodic-stall"]["evidence"]["stall_count"]
    )
    rss = [b["rss_bytes"] for b in buckets if "rss_bytes" in b]
    assert rss[-1] - rss[0] > 100 * MIB  # 200 MiB kept over the run
    assert all(b["steps_per_s"] is None or b["steps_per_s"] > 0 for b in buckets)


def test_analyze_of_the_run_folder_carries_the_findings_and_the_timeline(
    jobs: dict[str, Ran],
) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(jobs["planted"].folder), "--format", "json"]) == 0
    report = json.loads(out.getvalue())
    assert {f["rule"] for f in report["findings"]} >= LONG_RUN_RULES
    assert report["timeline"] == jobs["planted"].report["timeline"]


def test_prometheus_exports_the_growth_rate_and_the_stall_share(jobs: dict[str, Ran]) -> None:
    snapshot = LiveMonitor(jobs["planted"].folder, load_rules(None)).tick()
    families = {metric_name(f): f for f in snapshot_families(snapshot, "r", "n", 0.0)}
    (growth,) = families["torchtop_memory_growth_bytes_per_second"].samples
    assert growth.labels["memory"] == "host"
    assert growth.value == pytest.approx(
        jobs["planted"].findings["memory-growth"]["bytes_per_hour"] / 3600, rel=0.01
    )
    (lost,) = families["torchtop_stall_lost_ratio"].samples
    assert lost.value == jobs["planted"].findings["periodic-stall"]["share_lost"]
    steady = LiveMonitor(jobs["steady"].folder, load_rules(None)).tick()
    names = {metric_name(f) for f in snapshot_families(steady, "r", "n", 0.0)}
    assert "torchtop_stall_lost_ratio" not in names
