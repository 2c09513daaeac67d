"""One `run.json` whoever launches: `run`, `attach` and a tune's measured run write the same
fields, the host named as the agent names it, each document exactly the schema's Struct."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import msgspec
import pytest

from torchtop.advice.plan import initial_plan
from torchtop.jobs.job import start_plan
from torchtop.model.plan import AppliedFix
from torchtop.runs.layout import RUN_SCHEMA
from torchtop.runs.records import ExitRecord, RunRecord

TORCHTOP = [sys.executable, "-m", "torchtop"]
SLEEPER = "import time; print('ready', flush=True); time.sleep(60)"
FIX = AppliedFix("dataloader.num_workers", 2, "override", "Load batches in 2 workers.")


@dataclass(frozen=True)
class Launched:
    """The run folders of one launch each: `run`, `attach`, and a tune's measured run."""

    root: Path
    tuned_pid: int

    def text(self, kind: str, name: str) -> bytes:
        return (self.root / kind / name).read_bytes()

    def read(self, kind: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.text(kind, name))
        return found


def run_folder_of_run(root: Path) -> None:
    command = ["run", "--headless", "--run-dir", str(root / "run"), "--"]
    result = subprocess.run(
        [*TORCHTOP, *command, sys.executable, "-c", "pass"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def run_folder_of_attach(root: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    try:
        assert sleeper.stdout is not None and sleeper.stdout.readline() == "ready\n"
        pid = str(sleeper.pid)
        command = ["attach", pid, "--headless", "--for", "1", "--run-dir", str(root / "attach")]
        result = subprocess.run([*TORCHTOP, *command], capture_output=True, text=True, timeout=120)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert result.returncode == 0, result.stderr


def run_folder_of_tune(root: Path) -> int:
    plan = initial_plan([sys.executable, "-c", "pass"], {}, str(root))
    plan = replace(plan, overrides={"dataloader.num_workers": 2}, fixes=(FIX,))
    measured = start_plan(plan, root / "tune")
    ending = measured.finish()
    assert measured.ending == ending
    return measured.pid


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Launched:
    root = tmp_path_factory.mktemp("launched")
    run_folder_of_run(root)
    run_folder_of_attach(root)
    return Launched(root, run_folder_of_tune(root))


def test_run_attach_and_tune_write_one_run_json_schema(launched: Launched) -> None:
    ran, attached, tuned = (launched.read(kind, "run.json") for kind in ("run", "attach", "tune"))
    assert list(ran) == list(attached) == list(tuned)
    assert [r["kind"] for r in (ran, attached, tuned)] == ["run", "attach", "tune"]
    assert {r["schema"] for r in (ran, attached, tuned)} == {RUN_SCHEMA}
    assert {r["host"] for r in (ran, attached, tuned)} == {socket.gethostname()}
    assert (ran["overrides"], ran["fixes"]) == ({}, [])
    assert tuned["overrides"] == {"dataloader.num_workers": 2}
    assert tuned["fixes"] == [msgspec.to_builtins(FIX.entry())]
    assert tuned["fixes"][0] == {
        "knob": "dataloader.num_workers",
        "value": 2,
        "apply": "override",
        "description": "Load batches in 2 workers.",
    }
    assert tuned["cwd"] == str(launched.root) and tuned["pid"] == launched.tuned_pid


NODE_FIELDS = ("node", "slurm_job_id", "slurm_node_id", "slurm_proc_id", "slurm_job_nodelist")


@pytest.mark.parametrize("kind", ["run", "attach", "tune"])
def test_the_run_json_each_launch_writes_decodes_strictly_with_every_field_of_the_schema(
    launched: Launched, kind: str
) -> None:
    # RunRecord forbids unknown fields, so a strict decode fails on any field it does not name.
    record = msgspec.json.decode(launched.text(kind, "run.json"), type=RunRecord)
    assert record.kind == kind
    # Every field but the node's, which only a launcher sharing the folder with others writes,
    # and `attached`, which only attach to a job of several ranks writes.
    single_node = [f for f in RunRecord.__struct_fields__ if f not in (*NODE_FIELDS, "attached")]
    assert list(launched.read(kind, "run.json")) == single_node
    assert record.overrides is not msgspec.UNSET and record.fixes is not msgspec.UNSET


@pytest.mark.parametrize("kind", ["run", "attach", "tune"])
def test_the_exit_json_each_launch_writes_decodes_strictly(launched: Launched, kind: str) -> None:
    record = msgspec.json.decode(launched.text(kind, "exit.json"), type=ExitRecord)
    assert record.how == {"run": "exited", "attach": "detached", "tune": "stopped"}[kind]


def test_attach_leaves_out_of_exit_json_what_only_a_launch_sees(launched: Launched) -> None:
    detached, ran = launched.read("attach", "exit.json"), launched.read("run", "exit.json")
    assert "duration_s" not in detached and "stderr_tail" not in detached
    assert list(ran) == [*detached, "duration_s", "stderr_tail", "log"]
    assert isinstance(ran["duration_s"], float) and ran["duration_s"] >= 0
