"""Real Lightning and Hugging Face `Trainer` jobs under `torchtop run --headless`.

Each job says its own optimizer-step count and the num_workers of the DataLoader the framework
iterates, so torchtop's steps, its verdict and its fixes are held against the job itself: the step
count the report gives (the job's, less the warm-up steps torchtop leaves out), the verdict the
job was built for, and the `arg` fix planned from the options the agent saw, written in the
framework's own convention, reaching the loader the framework builds (Lightning re-creates it to
add a sampler; `Trainer` wraps it through accelerate).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import WORKLOADS
from tests.live.test_live_verdicts import WINDOW_EARLY
from tests.tuning.running import agent_records
from torchtop.advice.machine import Machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.assess.run import WARMUP_STEPS
from torchtop.jobs.job import start_plan
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.runs.records import Settings

pytestmark = pytest.mark.frameworks
JOBS = WORKLOADS / "frameworks"
STEPS = 40
OWN_STEPS = re.compile(r"^optimizer steps (\d+)$", re.MULTILINE)
LOADER_WORKERS = re.compile(r"^epoch \d+ loader num_workers (\d+)$", re.MULTILINE)


def lightning(*args: str) -> list[str]:
    pytest.importorskip("lightning", reason="the frameworks extra is not installed")
    pytest.importorskip("jsonargparse", reason="the frameworks extra is not installed")
    job = [sys.executable, str(JOBS / "lightning_cli_job.py"), "fit"]
    return [*job, "--trainer.max_steps", str(STEPS), *args]


def hf_trainer(tmp_path: Path, *args: str) -> list[str]:
    pytest.importorskip("transformers", reason="the frameworks extra is not installed")
    pytest.importorskip("accelerate", reason="the frameworks extra is not installed")
    job = [sys.executable, str(JOBS / "hf_trainer_job.py"), "--output_dir", str(tmp_path / "out")]
    quiet = ["--report_to", "none", "--save_strategy", "no", "--logging_strategy", "no"]
    quiet += ["--use_cpu", "--disable_tqdm", "true", "--per_device_train_batch_size", "16"]
    return [*job, *quiet, "--max_steps", str(STEPS), *args]


def run_headless(tmp_path: Path, command: list[str]) -> tuple[dict[str, Any], str]:
    """The report of `torchtop run --headless --for S` over the job, and what the job printed
    (on torchtop's stderr, as its stdout is the report)."""
    report = tmp_path / "report.json"
    run = [sys.executable, "-m", "torchtop", "run", "--headless", "--for", "120"]
    run += ["--run-dir", str(tmp_path / "run"), "--report", str(report), "--", *command]
    env = {**os.environ, **WINDOW_EARLY}
    done = subprocess.run(run, capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(report.read_text()), done.stderr


def input_bound(tmp_path: Path, framework: str) -> list[str]:
    if framework == "lightning":
        return lightning("--data.load_ms", "5")
    return hf_trainer(tmp_path, "--load_ms", "5")


def compute_bound(tmp_path: Path, framework: str) -> list[str]:
    if framework == "lightning":
        return lightning("--model.width", "768", "--data.batch_size", "64")
    return hf_trainer(tmp_path, "--width", "256")


@pytest.mark.parametrize("framework", ["lightning", "hf-trainer"])
@pytest.mark.parametrize(
    ("build", "expected"), [(input_bound, "dataloader"), (compute_bound, "cpu")]
)
def test_a_framework_job_gets_its_verdict_and_the_steps_it_counted_itself(
    tmp_path: Path, framework: str, build: Any, expected: str
) -> None:
    command = build(tmp_path, framework)
    report, said = run_headless(tmp_path, command)
    own = OWN_STEPS.search(said)
    assert own is not None, said[-2000:]
    assert int(own.group(1)) == STEPS
    assert report["steps"]["count"] == STEPS - WARMUP_STEPS
    own_ms = re.search(r"^median step ms ([\d.]+)$", said, re.MULTILINE)
    assert own_ms is not None, said[-2000:]
    assert report["steps"]["p50_ms"] == pytest.approx(float(own_ms.group(1)), rel=0.1)
    assert report["bottleneck"] == expected, (report["verdict"], report["breakdown"])


@pytest.mark.parametrize("framework", ["lightning", "hf-trainer"])
def test_the_workers_fix_goes_by_the_frameworks_own_option_and_reaches_its_loader(
    tmp_path: Path, framework: str
) -> None:
    command = input_bound(tmp_path, framework)
    report, _ = run_headless(tmp_path, command)
    fixes = [x for f in report["findings"] for x in f["fixes"]]
    workers = next(x for x in fixes if x["knob"] == "dataloader.num_workers")
    settings = msgspec.convert(agent_records(tmp_path / "run", "settings")[-1], Settings)
    fix = Fix("dataloader.num_workers", 2, workers["apply"], str(workers.get("description", "")))
    two_cores = Machine(logical_cores=2, physical_cores=2)
    plan = plan_fix(fix, initial_plan(command, os.environ, str(tmp_path)), settings, two_cores)
    assert isinstance(plan, LaunchPlan), plan
    flag = "--data.num_workers" if framework == "lightning" else "--dataloader_num_workers"
    assert plan.route == "arg", plan
    assert plan.command[-2:] == (flag, "2")
    relaunched = subprocess.run(
        plan.command, capture_output=True, text=True, timeout=240, cwd=tmp_path
    )
    assert relaunched.returncode == 0, relaunched.stderr[-2000:]
    seen = LOADER_WORKERS.findall(relaunched.stdout)
    assert seen and set(seen) == {"2"}, relaunched.stdout[-2000:]


@pytest.mark.parametrize("framework", ["lightning", "hf-trainer"])
def test_the_workers_override_reaches_the_loader_the_framework_builds(
    tmp_path: Path, framework: str
) -> None:
    command = input_bound(tmp_path, framework)
    plan = replace(
        initial_plan(command, os.environ, str(tmp_path)),
        overrides={"dataloader.num_workers": 2},
    )
    started = start_plan(plan, tmp_path / "run")
    assert started.process.wait(timeout=240) == 0, (tmp_path / "run" / "stderr.log").read_text()
    said = (tmp_path / "run" / "stdout.log").read_text()
    seen = LOADER_WORKERS.findall(said)
    assert len(seen) >= 2 and set(seen) == {"2"}, said[-2000:]


@pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="torch.compile's inductor needs a C compiler on CPU",
)
def test_a_compiled_models_compile_steps_stay_out_of_its_step_figures(tmp_path: Path) -> None:
    command = [sys.executable, str(JOBS / "compiled_job.py"), str(STEPS)]
    report, said = run_headless(tmp_path, command)
    first = re.search(r"^first step ms ([\d.]+)$", said, re.MULTILINE)
    later = re.search(r"^later median ms ([\d.]+)$", said, re.MULTILINE)
    assert first and later, said[-2000:]
    steps = report["steps"]
    assert steps["count"] == STEPS - WARMUP_STEPS
    # The compile is many times a later step; had it leaked, the p95 would sit near it.
    assert float(first.group(1)) > 20 * float(later.group(1))
    assert steps["p95_ms"] < float(first.group(1)) / 10
    assert report["bottleneck"] == "cpu", (report["verdict"], report["breakdown"])


def torchrun(*args: str) -> list[str]:
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    return [*run, str(JOBS / "ddp_job.py"), *args]


def test_a_torchrun_ddp_job_is_input_bound_on_both_ranks_with_their_own_step_times(
    tmp_path: Path,
) -> None:
    report, said = run_headless(tmp_path, torchrun(str(STEPS)))
    assert report["bottleneck"] == "dataloader", (report["verdict"], report["breakdown"])
    ranks = {entry["rank"]: entry for entry in report["ranks"]}
    assert sorted(ranks) == [0, 1]
    for rank, entry in ranks.items():
        own = re.search(rf"rank {rank} median step ms (\d+\.\d\d)", said)
        assert own is not None, said[-2000:]
        assert f"rank {rank} optimizer steps {STEPS}" in said
        assert entry["steps"]["count"] == STEPS - WARMUP_STEPS
        assert entry["steps"]["p50_ms"] == pytest.approx(float(own.group(1)), rel=0.1)
        assert entry["bottleneck"] == "dataloader"


def test_the_workers_override_reaches_every_ranks_loader_under_torchrun(tmp_path: Path) -> None:
    plan = replace(
        initial_plan(torchrun("12"), os.environ, str(tmp_path)),
        overrides={"dataloader.num_workers": 2},
    )
    started = start_plan(plan, tmp_path / "run")
    assert started.process.wait(timeout=240) == 0, (tmp_path / "run" / "stderr.log").read_text()
    said = (tmp_path / "run" / "stdout.log").read_text()
    for rank in (0, 1):
        # Not anchored: two ranks share the file, so one's line may run into the other's.
        seen = re.findall(rf"rank {rank} epoch \d+ loader num_workers (\d+)", said)
        assert seen and set(seen) == {"2"}, said[-2000:]
