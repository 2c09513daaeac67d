"""The frameworks' own parsers: the agent sees their options, and the planned option parses back.

LightningCLI parses with jsonargparse (which bypasses `parse_known_args`) and `Trainer` scripts
with `HfArgumentParser`; for each, the workers option is recorded from sys.argv, found for the
`dataloader.num_workers` knob, written into the command, and read back by the same parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest

from torchtop.advice.args import find_option, set_option
from torchtop.agent import cli_options
from torchtop.model.knobs import find_knob
from torchtop.runs.records import CliOption

pytestmark = pytest.mark.frameworks


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("parse_known_args", "_parse_known_args"):
        monkeypatch.setattr(argparse.ArgumentParser, name, getattr(argparse.ArgumentParser, name))
    monkeypatch.setattr(cli_options, "_options", {})
    cli_options.install(argparse)
    yield


def planned(argv: list[str], value: int) -> list[str]:
    knob = find_knob("dataloader.num_workers")
    assert knob is not None
    # As the run folder's reader decodes the agent's `settings` record.
    seen = msgspec.convert(cli_options.seen_options(), list[CliOption])
    option = find_option(knob, seen, {})
    assert option is not None, cli_options.seen_options()
    return set_option(["python", "train.py", *argv], option, value)


@pytest.mark.usefixtures("recording")
def test_jsonargparse_data_num_workers_is_seen_planned_and_parses_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jsonargparse = pytest.importorskip("jsonargparse", reason="the frameworks extra is missing")

    def parse(argv: list[str]) -> Any:
        monkeypatch.setattr(sys, "argv", ["train.py", *argv])
        parser = jsonargparse.ArgumentParser()
        parser.add_argument("--data.num_workers", type=int, default=0)
        parser.add_argument("--data.batch_size", type=int, default=16)
        return parser.parse_args()

    parse(["--data.batch_size", "8"])
    command = planned(["--data.batch_size", "8"], 4)
    assert command[-2:] == ["--data.num_workers", "4"]
    assert parse(command[2:]).data.num_workers == 4


@pytest.mark.usefixtures("recording")
def test_hf_dataloader_num_workers_is_seen_planned_and_parses_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    transformers = pytest.importorskip("transformers", reason="the frameworks extra is missing")

    def parse(argv: list[str]) -> Any:
        monkeypatch.setattr(sys, "argv", ["train.py", *argv])
        parser = transformers.HfArgumentParser(transformers.TrainingArguments)
        return parser.parse_args_into_dataclasses()[0]

    base = ["--output_dir", str(tmp_path), "--use_cpu"]
    parse(base)
    command = planned(base, 3)
    assert command[-2:] == ["--dataloader_num_workers", "3"]
    assert parse(command[2:]).dataloader_num_workers == 3
