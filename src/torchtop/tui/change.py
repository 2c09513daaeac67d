"""What applying a fix would change, exactly: the environment, the command line, or the code.

- `env`: `NAME=value` added to the relaunched job's environment (old and new command shown).
- `arg`: the script's own option rewritten, when its argparse options are known (the agent
  records them in `settings.cli_options`): `--num-workers 0` becomes `--num-workers 4`.
- `override`: the agent changes the library default inside the relaunched process; when the
  script also exposes the same setting as an option, the equivalent command line is shown too.
- `code`: a change only the user can make, shown as a patch and never applied behind their back.

Pure: the fix, the launch command and the seen options in, lines of text out.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from torchtop.model.findings import Fix
from torchtop.runs.records import CliOption

Options = Sequence[CliOption]


@dataclass(frozen=True)
class ChangeLine:
    kind: str
    """`note`, `old` (removed/before), `new` (added/after) or `patch` (code to write)."""
    text: str


@dataclass(frozen=True)
class Change:
    summary: str
    lines: tuple[ChangeLine, ...]


def describe_change(fix: Fix, command: Sequence[str], options: Options) -> Change:
    if fix.apply == "env":
        return _env_change(fix, command)
    if fix.apply == "arg":
        return _arg_change(fix, command, options)
    if fix.apply == "override":
        return _override_change(fix, command, options)
    return _code_change(fix)


def literal(value: object) -> str:
    """A value as Python source: `True`, `4`, `'high'`."""
    return repr(value)


def _env_change(fix: Fix, command: Sequence[str]) -> Change:
    name = fix.knob.removeprefix("env.")
    value = str(fix.value)
    lines = [ChangeLine("note", f"{name}={value} added to the job's environment")]
    if " " in value:
        lines.append(ChangeLine("note", f"({value}: worked out for this machine on relaunch)"))
        value = f"<{value}>"
    if command:
        lines += [
            ChangeLine("old", shlex.join(command)),
            ChangeLine("new", f"{name}={shlex.quote(value)} {shlex.join(command)}"),
        ]
    return Change(f"set {name}={value} in the environment of the relaunched job", tuple(lines))


def find_option(knob: str, options: Options) -> CliOption | None:
    """The script's option for a knob: same dest as the knob's last part, or a matching flag."""
    name = knob.rsplit(".", 1)[-1]
    flag = "--" + name.replace("_", "-")
    for option in options:
        if option.dest == name or flag in option.flags:
            return option
    return None


def new_value(value: object, current: object) -> object:
    """`2x` of a numeric current value is twice it; any other value is taken as it is."""
    if isinstance(value, str) and value.endswith("x") and not isinstance(current, bool):
        try:
            factor = float(value[:-1])
        except ValueError:
            return value
        if isinstance(current, int | float):
            scaled = current * factor
            return int(scaled) if isinstance(current, int) else scaled
    return value


def rewrite(command: Sequence[str], option: CliOption, value: object) -> list[str]:
    """The command with the option set to `value` (replaced where given, else appended)."""
    flags = option.flags
    words = list(command)
    if option.type == "bool":
        words = [w for w in words if w not in flags]
        return [*words, _long(flags)] if value is True else words
    for i, word in enumerate(words):
        if word in flags and i + 1 < len(words):
            words[i + 1] = str(value)
            return words
        if any(word.startswith(f + "=") for f in flags):
            words[i] = f"{word.split('=', 1)[0]}={value}"
            return words
    return [*words, _long(flags), str(value)]


def _long(flags: Sequence[str]) -> str:
    return max(flags, key=lambda f: (f.startswith("--"), len(f)))


def _arg_change(fix: Fix, command: Sequence[str], options: Options) -> Change:
    name = fix.knob.rsplit(".", 1)[-1]
    option = find_option(fix.knob, options)
    if option is None:
        why = (
            f"the script has no `--{name.replace('_', '-')}` option that torchtop saw"
            if options
            else "the script's command-line options are not known yet (no agent settings)"
        )
        return Change(
            f"set {name} to {fix.value} in the script's arguments",
            (ChangeLine("note", why + f": set {name} to {fix.value} yourself"),),
        )
    current = option.value
    value = new_value(fix.value, current)
    flag = _long(option.flags)
    lines = [ChangeLine("note", f"{flag}: {current} -> {value}")]
    if command:
        lines += [
            ChangeLine("old", shlex.join(command)),
            ChangeLine("new", shlex.join(rewrite(command, option, value))),
        ]
    return Change(f"relaunch with {flag} {value}", tuple(lines))


def override_statement(fix: Fix) -> str:
    """The change the agent makes, written as the code it stands for."""
    namespace, _, name = fix.knob.rpartition(".")
    if namespace == "dataloader":
        return f"DataLoader({name}={literal(fix.value)})"
    if fix.knob == "torch.float32_matmul_precision":
        return f"torch.set_float32_matmul_precision({literal(fix.value)})"
    return f"{fix.knob} = {literal(fix.value)}"


def _override_change(fix: Fix, command: Sequence[str], options: Options) -> Change:
    statement = override_statement(fix)
    lines = [ChangeLine("new", f"the agent sets {statement} in the relaunched process")]
    option = find_option(fix.knob, options)
    if option is not None and command:
        current = option.value
        flag = _long(option.flags)
        lines += [
            ChangeLine("note", f"or through the script's own {flag} (now {current}):"),
            ChangeLine("old", shlex.join(command)),
            ChangeLine("new", shlex.join(rewrite(command, option, fix.value))),
        ]
    return Change(f"override: {statement}", tuple(lines))


def _code_change(fix: Fix) -> Change:
    what = fix.knob.removeprefix("code.").replace("_", " ")
    lines = [ChangeLine("note", f"# {what}")]
    lines += [ChangeLine("patch", line) for line in str(fix.value).splitlines() or [""]]
    return Change("a code change only you can make; torchtop never applies it", tuple(lines))
