"""A rank's last stack and a shared run's nodes in every report form: kept from the newest dump
of its pid, in the JSON report only for a rank that ended badly, one line in the text and
Markdown reports, and nothing new in the reports of a run of one rank or one node."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CONTEXT
from tests.fake_run import FakeRun
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import load_rules
from torchtop.model.report import LastStack, NodeReport, StackLine
from torchtop.report.contract import report_to_json
from torchtop.report.markdown import render_markdown
from torchtop.report.nodes import node_fields, node_lines, stack_summary
from torchtop.report.text import render_text
from torchtop.runs.journal import JournalWriter
from torchtop.runs.records import Bye, StackFrame, StackProcess, StacksSample, StackThread, Step
from torchtop.runs.state import load_run

JOB_FILE = "/home/u/train.py"
TORCH_FILE = "/venv/lib/python3.11/site-packages/torch/autograd/graph.py"


def _frames(function: str) -> list[StackFrame]:
    return [
        StackFrame(function="_engine_run_backward", file=TORCH_FILE, line=979),
        StackFrame(function="backward", file="/x/torchtop/agent/hooks.py", line=133),
        StackFrame(function=function, file=JOB_FILE, line=42),
        StackFrame(function="<module>", file=JOB_FILE, line=90),
    ]


def _run(tmp_path: Path, killed_bye: Bye | None) -> FakeRun:
    """Two ranks stepping; pid 102 is dumped twice (the newest dump in `train_late`) and
    ends with `killed_bye`; pid 101 exits 0."""
    run = FakeRun(tmp_path / "run")
    for pid, rank in ((101, 0), (102, 1)):
        run.hello(pid, rank=rank)
    stacks = JournalWriter(run.layout.samples("stacks"))
    for n in range(20):
        run.t += 0.1
        for pid in (101, 102):
            run.agent(pid).write(Step(step=n, wall_s=0.1, t=run.t, backward_s=0.05))
        if n in (5, 15):
            thread = StackThread(tid=102, name="MainThread", frames=_frames(f"train_{n}"))
            idle = StackThread(tid=7, name="torchtop-children", frames=_frames("idle"))
            dumped = [StackProcess(pid=102, role="main", threads=[idle, thread])]
            stacks.write(StacksSample(t=run.t, processes=dumped))
    run.agent(101).write(Bye(t=run.t, reason="exit", exit_code=0))
    if killed_bye is not None:
        run.agent(102).write(killed_bye)
    return run


def test_a_killed_rank_carries_its_newest_dump_and_a_clean_exit_carries_none(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, Bye(t=1_700_000_009.0, reason="seen by parent", signal="SIGKILL"))
    document = report_to_json(assess(load_run(run.layout.root), {}, load_rules(), context=CONTEXT))
    ranks = {r["rank"]: r for r in document["ranks"]}
    assert ranks[1]["ended"] == "signal SIGKILL"
    last = ranks[1]["last_stack"]
    assert [f["function"] for f in last["frames"]][2] == "train_15"  # the newest, main thread
    assert last["at"].startswith("2023-11-14T22:13:21.")  # the dump's time, step 15's
    assert "last_stack" not in ranks[0]  # exit 0: where it was tells nothing


def test_a_rank_still_running_has_no_last_stack(tmp_path: Path) -> None:
    document = report_to_json(
        assess(load_run(_run(tmp_path, None).layout.root), {}, load_rules(), context=CONTEXT)
    )
    assert all("last_stack" not in r for r in document["ranks"])


def test_the_text_and_markdown_reports_say_where_the_dead_rank_was_in_the_jobs_own_code(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path, Bye(t=1_700_000_009.0, reason="seen by parent", signal="SIGKILL"))
    report = assess(load_run(run.layout.root), {}, load_rules(), context=CONTEXT)
    expected = (
        "last stack: at 22:13:21 UTC: _engine_run_backward (graph.py:979) < ... "
        "< train_15 (train.py:42)"
    )
    assert f"               {expected}\n" in render_text(report)
    assert f"- rank 1: {expected}\n" in render_markdown(report)
    text = render_text(report)
    assert "\nNODES\n" not in text and "%  on " not in text  # one launcher: no nodes
    assert "## Nodes" not in render_markdown(report)


def test_a_stack_whose_innermost_frame_is_the_jobs_is_named_alone() -> None:
    stack = LastStack(0.0, (StackLine("wait_forever", JOB_FILE, 7), StackLine("main", JOB_FILE, 9)))
    assert stack_summary(stack) == "at 00:00:00 UTC: wait_forever (train.py:7)"
    assert stack_summary(LastStack(0.0)) == "at 00:00:00 UTC: no frames"


def test_a_node_line_has_its_ranks_host_counters_and_ending_and_says_not_measured() -> None:
    measured = NodeReport("a", (0, 1), "gpu-01", 41.6, 12.34e9, 87.2, "crashed")
    unmeasured = NodeReport("b", (2, 3))
    assert node_fields(measured) == ("a", "0,1", "gpu-01", "42%", "12.3 GB", "87%", "crashed")
    assert node_fields(unmeasured) == ("b", "2,3", "n/a", "n/a", "n/a", "n/a", "running")
    lines = node_lines([measured, unmeasured])
    assert " ".join(lines[0].split()) == (
        "a ranks 0,1 host gpu-01 cpu 42% mem 12.3 GB gpu 87% ended: crashed"
    )
    assert lines[1].endswith("running")
