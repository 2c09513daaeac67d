"""The script's argparse options are recorded when it parses its own command line."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from torchtop.agent import cli_options


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """argparse wrapped for this test only, with nothing recorded yet."""
    monkeypatch.setattr(
        argparse.ArgumentParser, "parse_known_args", argparse.ArgumentParser.parse_known_args
    )
    monkeypatch.setattr(
        argparse.ArgumentParser, "_parse_known_args", argparse.ArgumentParser._parse_known_args
    )
    monkeypatch.setattr(cli_options, "_options", {})
    cli_options.install(argparse)
    yield


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    made.add_argument("data", type=Path)
    made.add_argument("--workers", "-j", type=int, default=2)
    made.add_argument("--amp", action="store_true")
    made.add_argument("--verbose", "-v", action="count", default=0)
    made.add_argument("--version", action="version", version="1")
    return made


@pytest.mark.usefixtures("recording")
def test_a_parse_of_sys_argv_records_every_option_with_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "/data", "-j", "8", "--amp"])
    parser().parse_args()
    options = {o["dest"]: o for o in cli_options.seen_options()}
    assert set(options) == {"data", "workers", "amp", "verbose"}
    assert options["workers"] == {
        "flags": ["--workers", "-j"],
        "dest": "workers",
        "type": "int",
        "default": 2,
        "value": 8,
    }
    assert options["data"]["flags"] == []
    assert options["data"]["type"] == "Path"
    assert (options["amp"]["type"], options["amp"]["value"]) == ("bool", True)
    assert options["verbose"]["type"] == "int"


@pytest.mark.usefixtures("recording")
def test_a_parse_of_an_explicit_list_is_not_the_script_command_line() -> None:
    parser().parse_args(["/data"])
    assert cli_options.seen_options() == []


@pytest.mark.usefixtures("recording")
def test_installing_twice_wraps_once() -> None:
    wrapped = argparse.ArgumentParser.parse_known_args
    cli_options.install(argparse)
    assert argparse.ArgumentParser.parse_known_args is wrapped


@pytest.mark.usefixtures("recording")
def test_a_subcommands_options_from_the_tail_of_sys_argv_are_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "argv", ["train.py", "fit", "--workers", "3"])
    made = argparse.ArgumentParser()
    fit = made.add_subparsers(dest="command").add_parser("fit")
    fit.add_argument("--workers", type=int, default=0)
    made.parse_args()
    options = {o["dest"]: o for o in cli_options.seen_options()}
    assert options["workers"]["flags"] == ["--workers"]
    assert options["workers"]["value"] == 3


RECOVERING = """
import argparse, json, sys
from torchtop.agent import cli_options

def build():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-workers", type=int, default=0)
    parser.add_argument("--amp", action="store_true")
    return parser

script = build()
args = script.parse_args()  # parsed before any agent was there, as a job attach finds
library = argparse.ArgumentParser()  # another parser in memory that reads none of sys.argv
library.add_argument("--port", type=int, default=1)
strict = argparse.ArgumentParser()  # one whose parse of sys.argv fails: skipped, quietly
strict.add_argument("--needed", required=True)
print(cli_options.recover())
print(json.dumps(cli_options.seen_options()))
"""


def test_an_injected_agent_recovers_the_options_the_script_parsed_before_it_came(
    tmp_path: Path,
) -> None:

    script = tmp_path / "train.py"
    script.write_text(RECOVERING)
    done = subprocess.run(
        [sys.executable, str(script), "--num-workers", "3", "--amp"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    count, options = done.stdout.splitlines()
    assert count == "1", "only the script's parser recognised sys.argv"
    by_dest = {o["dest"]: o for o in json.loads(options)}
    assert by_dest["num_workers"]["flags"] == ["--num-workers"]
    assert by_dest["num_workers"]["value"] == 3 and by_dest["num_workers"]["default"] == 0
    assert by_dest["amp"]["value"] is True and by_dest["amp"]["type"] == "bool"
    assert "port" not in by_dest and "needed" not in by_dest
    assert done.stderr == "", "a failed parse of someone else's parser prints nothing"
