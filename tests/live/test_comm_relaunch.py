"""Fixes for a job on two nodes: every node's relaunch line, built from what it ran.

Two launchers (`TORCHTOP_NODE` a and b, on this machine) share one run folder, each running
its half of a real two-node gloo DDP job; the report must say the user relaunches the job and
give each node the exact line its launcher runs with the fix.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORKLOADS
from tests.live.two_nodes import free_port

JOB = WORKLOADS / "ddp_comm.py"
SHIPPED_RULES = Path(__file__).resolve().parents[2] / "rules"
# A rule with an NCCL setting that fires on any job of several ranks: the gloo job here has
# no NCCL, and the shipped rules rightly offer NCCL settings only where NCCL runs.
ENV_RULE = """
id = "test-nccl-sockets"
parent = "communication"
title = "test: an environment fix on every node"
when = "ranks_count > 1"
why = "Source: this test."

[[fixes]]
knob = "env.NCCL_SOCKET_NTHREADS"
value = "4"
apply = "env"
description = "test"

[[examples]]
expect = "fire"
metrics = { communication_share = 0.5, ranks_count = 2 }

[[examples]]
expect = "quiet"
metrics = { communication_share = 0.5, ranks_count = 1 }
"""

pytestmark = pytest.mark.slow


def torchrun(node_rank: int, port: int) -> list[str]:
    return [
        sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
        "--node-rank", str(node_rank), "--nproc-per-node", "1", "--rdzv-backend", "c10d",
        "--rdzv-endpoint", f"127.0.0.1:{port}", str(JOB),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    base = tmp_path_factory.mktemp("nodes")
    run_dir, port = base / "run", free_port()
    run_dir.mkdir()
    commands = {"a": torchrun(0, port), "b": torchrun(1, port)}
    env = {**os.environ, "TORCHTOP_WINDOW_FIRST_STEP": "3", "TORCHTOP_WINDOW_STEPS": "4"}
    torchtop = [sys.executable, "-m", "torchtop", "run", "--headless", "--run-dir", str(run_dir)]
    launchers = [
        subprocess.Popen(
            [*torchtop, "--", *command],
            env={**env, "TORCHTOP_NODE": node},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for node, command in commands.items()
    ]
    for launcher in launchers:
        _, err = launcher.communicate(timeout=240)
        assert launcher.returncode == 0, err[-2000:]
    return run_dir, commands


def analyze(run_dir: Path, rules: Path, fmt: str) -> str:
    from torchtop.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["analyze", str(run_dir), "--format", fmt, "--rules", str(rules)]) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rules") / "rules"
    shutil.copytree(SHIPPED_RULES, folder)
    (folder / "test-nccl-sockets.toml").write_text(ENV_RULE)
    return folder


def test_an_env_fix_gives_each_node_its_own_launch_line_with_the_variable(
    two_nodes: tuple[Path, dict[str, list[str]]], rules: Path
) -> None:
    run_dir, commands = two_nodes
    report: dict[str, Any] = json.loads(analyze(run_dir, rules, "json"))
    relaunch = report["relaunch"]
    assert relaunch["by"] == "user"
    entry = next(f for f in relaunch["fixes"] if f["knob"] == "env.NCCL_SOCKET_NTHREADS")
    for node, command in commands.items():
        launcher = ["torchtop", "run", "--run-dir", str(run_dir), "--", *command]
        assert entry["nodes"][node] == "NCCL_SOCKET_NTHREADS=4 " + shlex.join(launcher)


def test_the_text_report_says_the_user_relaunches_and_lists_both_nodes(
    two_nodes: tuple[Path, dict[str, list[str]]], rules: Path
) -> None:
    run_dir, commands = two_nodes
    text = analyze(run_dir, rules, "text")
    assert "relaunched by you, not by torchtop" in text
    section = text[text.index("RELAUNCH (several nodes)") :]
    # The nodes' lines differ by --node-rank, so each node gets its own.
    assert "node a: NCCL_SOCKET_NTHREADS=4 torchtop run" in section
    assert "node b: NCCL_SOCKET_NTHREADS=4 torchtop run" in section
    assert shlex.join(commands["b"]) in section


def test_a_code_fix_is_the_same_edit_then_each_nodes_unchanged_line(
    two_nodes: tuple[Path, dict[str, list[str]]],
) -> None:
    run_dir, commands = two_nodes
    report: dict[str, Any] = json.loads(analyze(run_dir, SHIPPED_RULES, "json"))
    codes = [f for f in report["relaunch"]["fixes"] if f["apply"] == "code"]
    assert codes, [f["rule"] for f in report["findings"]]
    for node, command in commands.items():
        line = shlex.join(["torchtop", "run", "--run-dir", str(run_dir), "--", *command])
        assert codes[0]["nodes"][node] == "edit the script as the fix says, then: " + line


def test_the_markdown_report_gives_each_nodes_line_in_a_shell_block(
    two_nodes: tuple[Path, dict[str, list[str]]], rules: Path
) -> None:
    run_dir, commands = two_nodes
    markdown = analyze(run_dir, rules, "markdown")
    section = markdown[markdown.index("## Relaunch (several nodes)") :]
    assert section.count("```sh") >= 1
    for node, command in commands.items():
        launcher = ["torchtop", "run", "--run-dir", str(run_dir), "--", *command]
        assert f"# node {node}\nNCCL_SOCKET_NTHREADS=4 {shlex.join(launcher)}" in section
