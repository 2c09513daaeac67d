"""The `arg` route: find the script's option for a knob, and set it in the command line.

An option is found among those the agent saw the script's argparse define (`cli_options`, by
`dest`), or bound by the user in `torchtop.toml` (`[bind] "dataloader.num_workers" =
"--workers"`; a flag ending in `=`, such as `loader.workers=`, is written as one `key=value`
word, the Hydra style). Setting it rewrites `--flag VALUE`, `--flag=VALUE` and `-fVALUE` where
the command has them, and otherwise adds the option after the script's own arguments.
Only the script's part of the command is touched, never the launcher's (`torchrun --nnodes`):
the agent's `argv` tells how many words at the end of the command are the script's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from torchtop.model.findings import format_value
from torchtop.model.knobs import Knob
from torchtop.runs.records import CliOption


@dataclass(frozen=True)
class ScriptOption:
    flags: tuple[str, ...]
    dest: str
    type: str | None
    default: object = None
    value: object = None

    @property
    def long_flag(self) -> str:
        longs = [f for f in self.flags if f.startswith("--") or f.endswith("=")]
        return (longs or list(self.flags))[0]

    @property
    def joined(self) -> bool:
        """A bound `key=` flag: written as one word."""
        return self.long_flag.endswith("=")

    @property
    def is_switch(self) -> bool:
        """A `store_true`/`store_false` option: present or absent, no value."""
        return self.type == "bool" and isinstance(self.default, bool | None) and not self.joined


def find_option(
    knob: Knob, cli_options: Sequence[CliOption], bindings: Mapping[str, str]
) -> ScriptOption | None:
    """The script's option for `knob`: a `torchtop.toml` binding first, then by argparse dest."""
    bound = bindings.get(knob.name)
    seen = [o for o in cli_options if o.flags]
    if bound:
        for option in seen:
            if bound in option.flags:
                return _option(option)
        return ScriptOption((bound,), knob.name, knob.type)
    for dest in knob.arg_dests:
        for option in seen:
            if option.dest == dest:
                return _option(option)
    return None


def _option(record: CliOption) -> ScriptOption:
    return ScriptOption(
        flags=tuple(str(f) for f in record.flags),
        dest=record.dest,
        type=record.type,
        default=record.default,
        value=record.value,
    )


def script_start(command: Sequence[str], argv: Sequence[str] | None) -> int:
    """Index of the first word of the script's arguments in `command`."""
    if argv is not None:
        tail = list(argv[1:])
        start = len(command) - len(tail)
        if start >= 1 and list(command[start:]) == tail:
            return start
    for index, word in enumerate(command):
        if word.endswith(".py"):
            return index + 1
        if word == "-m" and index + 1 < len(command):
            return index + 2
    return min(1, len(command))


def set_option(
    command: Sequence[str], option: ScriptOption, value: object, argv: Sequence[str] | None = None
) -> list[str]:
    """`command` with `option` set to `value` (a switch added or removed)."""
    start = script_start(command, argv)
    head, args = list(command[:start]), list(command[start:])
    if option.is_switch:
        return head + _set_switch(args, option, bool(value))
    text = format_value(value)
    if option.joined:
        kept = [a for a in args if not a.startswith(option.long_flag)]
        return head + _insert(kept, [option.long_flag + text])
    found = False
    for index, word in enumerate(args):
        for flag in option.flags:
            if word == flag and index + 1 < len(args):
                args[index + 1] = text
                found = True
            elif word.startswith(flag + "="):
                args[index] = f"{flag}={text}"
                found = True
            elif _short_attached(word, flag):
                args[index] = flag + text
                found = True
    if not found:
        args = _insert(args, [option.long_flag, text])
    return head + args


def _set_switch(args: list[str], option: ScriptOption, value: bool) -> list[str]:
    store_true = option.default is not True
    present = value if store_true else not value
    kept = [a for a in args if a not in option.flags]
    return _insert(kept, [option.long_flag]) if present else kept


def _short_attached(word: str, flag: str) -> bool:
    """`-j4` for the short flag `-j`."""
    return len(flag) == 2 and flag[0] == "-" and flag[1] != "-" and word.startswith(flag)


def _insert(args: list[str], words: list[str]) -> list[str]:
    """Add words before a `--` end-of-options marker, else at the end."""
    if "--" in args:
        at = args.index("--")
        return [*args[:at], *words, *args[at:]]
    return [*args, *words]
