"""How to apply a report's fixes to a job on several nodes: the user relaunches it.

Each node's launcher started its own part of the job (`torchrun --node-rank ...`), and they
meet at one rendezvous, so torchtop never restarts one node's part on its own: the report says
so, and gives, per node, the exact line its launcher must run instead, built from the command
that node recorded in `run.json`. An `env` fix prefixes the variable; an agent override travels
the way the launcher passes it, as `TORCHTOP_OVERRIDES` JSON; an `arg` fix names the option
to add (the script's own flag is the agent's knowledge of one process, not of every node's);
a code fix is the same edit on every node's copy of the script, then the unchanged line. Where
every node runs the same line (an `srun` over identical commands) it is given once.
"""

from __future__ import annotations

import json
import shlex
from typing import TypedDict

from torchtop.model.findings import Fix, format_value
from torchtop.model.report import NodeReport, Report

HOW = (
    "a job on several nodes is relaunched by you, not by torchtop: stop it, change the line "
    "every node's launcher runs (the sbatch script, the pod spec) as below, and launch it "
    "again (docs/multi-node.md)"
)


class RelaunchEntry(TypedDict):
    """One fix of a run several nodes shared, as each node's launcher would apply it."""

    rule: str
    knob: str
    value: str
    apply: str
    nodes: dict[str, str]
    """Node name -> the line that node runs instead."""


def relaunch_entries(report: Report) -> list[RelaunchEntry]:
    """Per launch-changing or code fix of the findings: the line each node runs instead."""
    if len(report.nodes) < 2:
        return []
    run_dir = report.paths[0] if report.paths else "RUN"
    entries: list[RelaunchEntry] = []
    seen: set[tuple[str, str]] = set()
    for finding in report.verdict.findings:
        for fix in finding.fixes:
            key = (fix.knob, format_value(fix.value))
            if key in seen:
                continue
            seen.add(key)
            entries.append(
                {
                    "rule": finding.rule,
                    "knob": fix.knob,
                    "value": format_value(fix.value),
                    "apply": fix.apply,
                    "nodes": {n.name: _line(fix, n, run_dir) for n in report.nodes},
                }
            )
    return entries


def relaunch_json(report: Report) -> dict[str, object]:
    """The report's `relaunch` (only for a run several nodes' launchers shared)."""
    entries = relaunch_entries(report)
    return {"relaunch": {"by": "user", "how": HOW, "fixes": entries}} if entries else {}


def relaunch_text(report: Report) -> list[str]:
    """The text report's section: the plain statement, then each fix's lines per node."""
    entries = relaunch_entries(report)
    if not entries:
        return []
    lines = ["RELAUNCH (several nodes)", f"  {HOW}"]
    for entry in entries:
        lines.append(f"  {entry['knob']} = {entry['value']}  [{entry['apply']}]")
        nodes = entry["nodes"]
        if len(set(nodes.values())) == 1:
            lines.append(f"    every node: {next(iter(nodes.values()))}")
        else:
            lines += [f"    node {name}: {line}" for name, line in nodes.items()]
    return [*lines, ""]


def _line(fix: Fix, node: NodeReport, run_dir: str) -> str:
    launcher = ["torchtop", "run", "--run-dir", run_dir, "--", *node.command]
    if fix.apply == "code" or fix.knob.startswith("code."):
        return "edit the script as the fix says, then: " + shlex.join(launcher)
    if fix.knob.startswith("env.") or fix.apply == "env":
        variable = fix.knob.removeprefix("env.")
        return f"{variable}={shlex.quote(format_value(fix.value))} {shlex.join(launcher)}"
    if fix.apply == "arg":
        return f"add the script's option for {fix.knob} = {format_value(fix.value)} to: " + (
            shlex.join(launcher)
        )
    overrides = json.dumps({fix.knob: fix.value}, sort_keys=True, default=str)
    return f"TORCHTOP_OVERRIDES={shlex.quote(overrides)} {shlex.join(launcher)}"


def relaunch_markdown(report: Report) -> list[str]:
    """The Markdown report's section: the statement, then each fix's lines in a code block."""
    entries = relaunch_entries(report)
    if not entries:
        return []
    lines = ["## Relaunch (several nodes)", "", HOW[0].upper() + HOW[1:] + ".", ""]
    for entry in entries:
        lines += [f"`{entry['knob']} = {entry['value']}` ({entry['apply']}):", "", "```sh"]
        lines += [f"# node {name}\n{_shell(line)}" for name, line in entry["nodes"].items()]
        lines += ["```", ""]
    return lines


def _shell(line: str) -> str:
    """A line as a shell block shows it: a note before the command becomes a comment."""
    note, found, command = line.partition(": torchtop run ")
    return f"# {note}:\ntorchtop run {command}" if found else line
