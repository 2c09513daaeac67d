"""A launcher's node: its name, SLURM's identity, and where in a shared run folder it writes."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from torchtop.jobs.job import start
from torchtop.runs.identity import launch_dir, node_folders, node_identity, safe_name
from torchtop.runs.journal import read_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import RunRecord

SLURM = {
    "SLURM_JOB_ID": "4242",
    "SLURM_NODEID": "1",
    "SLURM_PROCID": "1",
    "SLURM_JOB_NODELIST": "gpu[01-02]",
    "SLURM_JOB_NUM_NODES": "2",
}


def test_a_launcher_without_node_signals_keeps_the_single_node_layout(tmp_path: Path) -> None:
    assert launch_dir(tmp_path / "run", {}) == (tmp_path / "run", None)


def test_torchtop_node_names_the_node_folder(tmp_path: Path) -> None:
    where, node = launch_dir(tmp_path / "run", {"TORCHTOP_NODE": "a"})
    assert where == tmp_path / "run" / "nodes" / "a"
    assert node is not None and node.name == "a" and node.slurm_job_id is None


def test_a_slurm_job_on_two_nodes_is_named_by_the_hostname(tmp_path: Path) -> None:
    where, node = launch_dir(tmp_path / "run", SLURM)
    assert node is not None
    assert node.name == safe_name(socket.gethostname())
    assert (node.slurm_job_id, node.slurm_node_id, node.slurm_proc_id) == ("4242", 1, 1)
    assert node.slurm_job_nodelist == "gpu[01-02]"
    assert where.parent == tmp_path / "run" / "nodes"


def test_a_slurm_job_on_one_node_keeps_the_single_node_layout(tmp_path: Path) -> None:
    env = {**SLURM, "SLURM_JOB_NUM_NODES": "1"}
    assert launch_dir(tmp_path / "run", env) == (tmp_path / "run", None)


def test_a_folder_that_already_holds_nodes_puts_a_later_launcher_beside_them(
    tmp_path: Path,
) -> None:
    (tmp_path / "run" / "nodes" / "a").mkdir(parents=True)
    where, node = launch_dir(tmp_path / "run", {})
    assert node is not None and where == tmp_path / "run" / "nodes" / node.name
    assert node_folders(tmp_path / "run") == [tmp_path / "run" / "nodes" / "a"]


@pytest.mark.parametrize(
    ("given", "folder"),
    [
        ("node-a.cluster", "node-a.cluster"),
        ("../../etc", "etc"),
        ("a b/c", "a_b_c"),
        ("..", "node"),
    ],
)
def test_a_node_name_becomes_one_safe_folder_name(given: str, folder: str) -> None:
    assert node_identity({"TORCHTOP_NODE": given}).name == folder


def test_run_json_records_the_node_and_slurm_identity(tmp_path: Path) -> None:
    where, node = launch_dir(tmp_path / "run", {**SLURM, "TORCHTOP_NODE": "b"})
    job = start([sys.executable, "-c", "pass"], where, "run", node=node, agent=False)
    job.finish()
    record = read_record(RunLayout(where).run_json, RunRecord)
    assert record is not None
    assert record.node == "b"
    assert (record.slurm_job_id, record.slurm_node_id, record.slurm_proc_id) == ("4242", 1, 1)
    assert record.slurm_job_nodelist == "gpu[01-02]"


def test_a_single_node_run_json_has_no_node_fields(tmp_path: Path) -> None:
    job = start([sys.executable, "-c", "pass"], tmp_path / "run", "run", agent=False)
    job.finish()
    keys = json.loads((tmp_path / "run" / "run.json").read_text())
    assert not [key for key in keys if key == "node" or key.startswith("slurm")]
