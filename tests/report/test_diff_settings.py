"""`diff`'s settings that differ, from two reports' `source.command` and `settings`: in the
contract's order (command line, environment, overrides, what the agents recorded), a command
change named by its flag, and nothing said for a side that recorded no settings."""

from __future__ import annotations

from typing import Any

from torchtop.report.diff_settings import command_change, settings_change, settings_recorded


def report(
    workers: int = 0,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    overrides: dict[str, Any] | None = None,
    threads: int = 2,
    agent: bool = True,
) -> dict[str, Any]:
    """A recorded run's report as `report_to_json` writes one, with only what diff reads."""
    command = command or ["python", "main.py", "-a", "resnet18", "-j", str(workers), "data"]
    loader = {
        "num_workers": workers, "pin_memory": False, "batch_size": 32,
        "persistent_workers": False, "prefetch_factor": 2 if workers else None,
    }  # fmt: skip
    options = [
        {"dest": "workers", "flags": ["-j", "--workers"], "value": workers},
        {"dest": "arch", "flags": ["-a", "--arch"], "value": "resnet18"},
    ]
    settings = {
        "env": env if env is not None else {"OMP_NUM_THREADS": "2"},
        "overrides": overrides or {}, "agent": agent,
        "dataloader": loader if agent else None,
        "threads": {"torch_num_threads": threads, "omp_num_threads_env": "2"} if agent else None,
        "device": "cpu" if agent else None, "amp": False if agent else None,
        "compiled": False if agent else None, "options": options if agent else [],
    }  # fmt: skip
    return {"source": {"kind": "run", "command": command}, "settings": settings}


def test_a_num_workers_change_is_named_on_the_command_line_and_as_recorded() -> None:
    found = settings_change(report(workers=0), report(workers=2))
    assert found == [
        {"what": "command", "name": "-j", "a": "0", "b": "2", "option": "workers"},
        {"what": "recorded", "name": "dataloader.num_workers", "a": 0, "b": 2},
    ]  # prefetch_factor None -> 2 follows the workers: not a change of its own


def test_the_order_is_command_environment_overrides_then_recorded() -> None:
    a = report(workers=0, env={"OMP_NUM_THREADS": "2"}, threads=2)
    b = report(
        workers=0,
        env={"OMP_NUM_THREADS": "1", "KMP_AFFINITY": "compact"},
        overrides={"dataloader.pin_memory": True},
        threads=1,
        command=["python", "main.py", "-a", "resnet18", "-j", "0", "data", "--amp"],
    )
    found = settings_change(a, b)
    assert [(e["what"], e["name"]) for e in found] == [
        ("command", "--amp"),
        ("environment", "KMP_AFFINITY"),
        ("environment", "OMP_NUM_THREADS"),
        ("override", "dataloader.pin_memory"),
        ("recorded", "threads.torch_num_threads"),
    ]
    assert found[0]["a"] is None and found[0]["b"] == "--amp"  # given in B only
    assert found[1] == {"what": "environment", "name": "KMP_AFFINITY", "a": None, "b": "compact"}


def test_same_settings_give_no_entry() -> None:
    assert settings_change(report(workers=2), report(workers=2)) == []


def test_a_side_without_settings_is_compared_by_its_command_line_only() -> None:
    """A trace has no settings: nothing recorded is guessed for it, its command (if any)
    still compares."""
    trace = {"source": {"kind": "trace", "paths": ["x.json"]}}
    assert settings_change(trace, report()) == []
    assert not settings_recorded(trace) and settings_recorded(report())
    no_agent = report(workers=4, agent=False)  # the agent never reported (a job without torch)
    assert settings_change(report(workers=0), no_agent) == [
        {"what": "command", "name": "-j", "a": "0", "b": "4", "option": "workers"}
    ]


def test_an_unrecorded_environment_is_not_read_as_an_empty_one() -> None:
    """A run folder from before `run.json` kept `env` has `env: null`: unknown, not none set."""
    older = report()
    older["settings"]["env"] = None
    assert settings_change(older, report(env={"OMP_NUM_THREADS": "8"})) == []


def test_an_option_changed_in_the_code_not_on_the_command_line_is_named_as_an_option() -> None:
    a, b = report(workers=4), report(workers=4)
    b["settings"]["options"][1]["value"] = "resnet50"  # the default changed, same command
    assert settings_change(a, b) == [
        {"what": "option", "name": "arch", "a": "resnet18", "b": "resnet50"}
    ]


def test_command_changes_are_named_by_their_flag_or_position() -> None:
    assert command_change(["t.py", "--lr=0.1"], ["t.py", "--lr=0.2"]) == [
        {"what": "command", "name": "--lr", "a": "0.1", "b": "0.2"}
    ]
    assert command_change(["python", "a.py"], ["python", "b.py"]) == [
        {"what": "command", "name": "argv[1]", "a": "a.py", "b": "b.py"}
    ]
    assert command_change(["t.py", "--compile"], ["t.py"]) == [
        {"what": "command", "name": "--compile", "a": "--compile", "b": None}
    ]


def test_flags_given_on_one_side_only_are_each_named_by_their_flag() -> None:
    """tune's `arg` fix appends `--num-workers 4` to a command that did not give it."""
    assert command_change(
        ["t.py", "--lr", "0.1"], ["t.py", "--lr", "0.1", "--num-workers", "4"]
    ) == [{"what": "command", "name": "--num-workers", "a": None, "b": "4"}]
    assert command_change(["t.py"], ["t.py", "--amp", "--shift", "-1"]) == [
        {"what": "command", "name": "--amp", "a": None, "b": "--amp"},
        {"what": "command", "name": "--shift", "a": None, "b": "-1"},
    ]
    assert command_change(["t.py"], ["t.py"]) == [] and command_change(None, ["t.py"]) == []


def test_the_omp_variable_the_agent_echoes_is_said_once_as_the_environment_variable() -> None:
    a, b = report(env={"OMP_NUM_THREADS": "1"}), report(env={"OMP_NUM_THREADS": "2"})
    a["settings"]["threads"]["omp_num_threads_env"] = "1"
    assert settings_change(a, b) == [
        {"what": "environment", "name": "OMP_NUM_THREADS", "a": "1", "b": "2"}
    ]
    a["settings"]["env"] = b["settings"]["env"] = None  # not recorded: the echo is all there is
    assert settings_change(a, b) == [
        {"what": "recorded", "name": "threads.omp_num_threads_env", "a": "1", "b": "2"}
    ]
