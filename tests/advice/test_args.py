"""The `arg` route: finding the script's option for a knob and rewriting the command line."""

from __future__ import annotations

from torchtop.advice.args import ScriptOption, find_option, script_start, set_option
from torchtop.model.knobs import CATALOGUE
from torchtop.runs.records import CliOption

WORKERS = ScriptOption(("--num-workers",), "num_workers", "int", 0, 0)
PY = ["python", "train.py"]


def test_the_value_after_the_flag_is_replaced() -> None:
    command = [*PY, "--num-workers", "0", "--lr", "0.1"]
    assert set_option(command, WORKERS, 8) == [*PY, "--num-workers", "8", "--lr", "0.1"]


def test_the_flag_equals_value_form_is_replaced_in_place() -> None:
    assert set_option([*PY, "--num-workers=0"], WORKERS, 8) == [*PY, "--num-workers=8"]


def test_an_option_the_script_defines_but_the_command_omits_is_added_at_the_end() -> None:
    assert set_option([*PY, "--lr", "0.1"], WORKERS, 8) == [
        *PY,
        "--lr",
        "0.1",
        "--num-workers",
        "8",
    ]


def test_an_added_option_goes_before_an_end_of_options_marker() -> None:
    command = [*PY, "--lr", "0.1", "--", "data/"]
    assert set_option(command, WORKERS, 8) == [
        *PY,
        "--lr",
        "0.1",
        "--num-workers",
        "8",
        "--",
        "data/",
    ]


def test_a_short_flag_is_rewritten_in_both_of_its_forms() -> None:
    option = ScriptOption(("-j", "--workers"), "workers", "int", 4, 4)
    assert set_option([*PY, "-j", "2"], option, 8) == [*PY, "-j", "8"]
    assert set_option([*PY, "-j2"], option, 8) == [*PY, "-j8"]


def test_a_switch_is_added_or_removed_rather_than_given_a_value() -> None:
    pin = ScriptOption(("--pin-memory",), "pin_memory", "bool", False, False)
    assert set_option(PY, pin, True) == [*PY, "--pin-memory"]
    assert set_option([*PY, "--pin-memory"], pin, False) == PY
    no_pin = ScriptOption(("--no-pin",), "pin_memory", "bool", True, True)
    assert set_option(PY, no_pin, False) == [*PY, "--no-pin"]


def test_only_the_scripts_own_arguments_are_touched_not_the_launchers() -> None:
    option = ScriptOption(("--nnodes",), "nnodes", "int", 1, 1)
    command = ["torchrun", "--nnodes", "1", "train.py", "--nnodes", "1"]
    argv = ["train.py", "--nnodes", "1"]
    assert script_start(command, argv) == 4
    assert set_option(command, option, 2, argv) == [
        "torchrun",
        "--nnodes",
        "1",
        "train.py",
        "--nnodes",
        "2",
    ]


def test_without_argv_the_script_is_found_after_its_py_file_or_module() -> None:
    assert script_start(["python", "-u", "train.py", "--x"], None) == 3
    assert script_start(["python", "-m", "pkg.train", "--x"], None) == 3


def test_a_binding_in_torchtop_toml_names_the_flag_for_a_knob() -> None:
    knob = CATALOGUE["dataloader.num_workers"]
    found = find_option(knob, [], {"dataloader.num_workers": "--loader-procs"})
    assert found is not None and found.long_flag == "--loader-procs"
    assert set_option(PY, found, 6) == [*PY, "--loader-procs", "6"]


def test_a_hydra_style_binding_is_written_as_one_key_equals_value_word() -> None:
    knob = CATALOGUE["dataloader.num_workers"]
    found = find_option(knob, [], {"dataloader.num_workers": "loader.workers="})
    assert found is not None
    assert set_option([*PY, "loader.workers=0"], found, 6) == [*PY, "loader.workers=6"]


def test_an_option_is_found_by_any_of_the_dests_that_mean_the_knob() -> None:
    seen = [CliOption(flags=["-j", "--workers"], dest="workers", type="int", default=4, value=4)]
    found = find_option(CATALOGUE["dataloader.num_workers"], seen, {})
    assert found is not None and found.flags == ("-j", "--workers") and found.value == 4
    assert find_option(CATALOGUE["train.batch_size"], seen, {}) is None
