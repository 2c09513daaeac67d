"""The exact change each kind of fix makes: environment, command line, override or patch."""

from __future__ import annotations

from torchtop.model.findings import Fix
from torchtop.runs.records import CliOption
from torchtop.tui.change import describe_change, new_value, rewrite

COMMAND = ("python", "train.py", "--batch-size", "32", "--num-workers", "0")
OPTIONS = [
    CliOption(flags=["-b", "--batch-size"], dest="batch_size", type="int", default=32, value=32),
    CliOption(flags=["--num-workers"], dest="num_workers", type="int", default=0, value=0),
    CliOption(flags=["--pin-memory"], dest="pin_memory", type="bool", default=False, value=False),
]


def lines(fix: Fix, options: list[CliOption] = OPTIONS) -> list[tuple[str, str]]:
    return [(line.kind, line.text) for line in describe_change(fix, COMMAND, options).lines]


def test_an_env_fix_adds_the_variable_in_front_of_the_same_command() -> None:
    fix = Fix("env.KMP_BLOCKTIME", 1, "env", "")
    assert lines(fix) == [
        ("note", "KMP_BLOCKTIME=1 added to the job's environment"),
        ("old", "python train.py --batch-size 32 --num-workers 0"),
        ("new", "KMP_BLOCKTIME=1 python train.py --batch-size 32 --num-workers 0"),
    ]


def test_an_env_value_worked_out_on_relaunch_is_shown_as_a_placeholder() -> None:
    change = lines(Fix("env.OMP_NUM_THREADS", "physical cores", "env", ""))
    assert ("new", "OMP_NUM_THREADS='<physical cores>' " + " ".join(COMMAND)) in change


def test_an_arg_fix_rewrites_the_scripts_own_option() -> None:
    change = lines(Fix("train.batch_size", "2x", "arg", ""))
    assert change == [
        ("note", "--batch-size: 32 -> 64"),
        ("old", "python train.py --batch-size 32 --num-workers 0"),
        ("new", "python train.py --batch-size 64 --num-workers 0"),
    ]


def test_an_arg_fix_for_an_option_the_script_lacks_says_so() -> None:
    change = lines(Fix("train.batch_size", "2x", "arg", ""), OPTIONS[1:])
    assert change == [
        ("note", "the script has no `--batch-size` option that torchtop saw: set batch_size to "
                 "2x yourself"),
    ]  # fmt: skip


def test_an_arg_fix_without_known_options_says_they_are_not_known_yet() -> None:
    (kind, text), *_ = lines(Fix("train.batch_size", "2x", "arg", ""), [])
    assert kind == "note" and "options are not known yet" in text


def test_an_override_names_the_library_call_and_the_equivalent_option() -> None:
    change = lines(Fix("dataloader.num_workers", 4, "override", ""))
    assert change == [
        ("new", "the agent sets DataLoader(num_workers=4) in the relaunched process"),
        ("note", "or through the script's own --num-workers (now 0):"),
        ("old", "python train.py --batch-size 32 --num-workers 0"),
        ("new", "python train.py --batch-size 32 --num-workers 4"),
    ]


def test_an_override_without_a_matching_option_is_the_library_change_alone() -> None:
    change = lines(Fix("torch.float32_matmul_precision", "high", "override", ""))
    assert change == [
        ("new", "the agent sets torch.set_float32_matmul_precision('high') in the relaunched "
                "process"),
    ]  # fmt: skip


def test_a_code_fix_is_a_patch_the_user_applies() -> None:
    fix = Fix("code.non_blocking_copy", "batch.to(device, non_blocking=True)", "code", "")
    change = describe_change(fix, COMMAND, OPTIONS)
    assert "never applies it" in change.summary
    assert [(x.kind, x.text) for x in change.lines] == [
        ("note", "# non blocking copy"),
        ("patch", "batch.to(device, non_blocking=True)"),
    ]


def test_an_option_given_with_equals_is_rewritten_in_place() -> None:
    option = OPTIONS[1]
    assert rewrite(["train.py", "--num-workers=0"], option, 4) == ["train.py", "--num-workers=4"]


def test_an_option_not_on_the_command_line_is_appended_by_its_long_flag() -> None:
    assert rewrite(["train.py"], OPTIONS[0], 64) == ["train.py", "--batch-size", "64"]


def test_a_boolean_option_is_added_or_removed_as_a_flag() -> None:
    assert rewrite(["train.py"], OPTIONS[2], True) == ["train.py", "--pin-memory"]
    assert rewrite(["train.py", "--pin-memory"], OPTIONS[2], False) == ["train.py"]


def test_a_multiplier_scales_numbers_and_leaves_other_values_alone() -> None:
    assert new_value("2x", 32) == 64
    assert new_value("2x", 0.5) == 1.0
    assert new_value("2x", "auto") == "2x"
    assert new_value(4, 0) == 4
