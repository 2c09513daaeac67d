"""The forms a fix's value may take in a rule file, and which of them a knob can ever take.

A rule speaks in words a reader understands (`"physical cores"`, `"cores / (workers + 1)"`,
`"2x"`); the planner (`advice.values`) turns them into numbers for one job on one machine, and
the rule loader (`diagnosis.rules`) refuses on load a value that no job could turn into one
(`"cores/(workers+1)"` on an integer knob would otherwise load and never apply). Both read the
grammar here, so what loads is exactly what resolves.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from torchtop.model.knobs import Knob

MACHINE_WORDS: dict[str, str] = {
    "physical cores": "physical_cores",
    "cores": "logical_cores",
    "logical cores": "logical_cores",
    "cores / (workers + 1)": "cores_per_worker",
}
"""Words for a number of the machine (or the job), matched after `strip().lower()`."""
_MULTIPLE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*x\s*$")
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


class SymbolicValue(NamedTuple):
    quantity: str
    """A value of `MACHINE_WORDS`, or `multiple` (of the knob's current value)."""
    factor: float = 1.0


def symbolic_value(raw: object) -> SymbolicValue | None:
    """What `raw` stands for, or None where it is a literal value."""
    if not isinstance(raw, str):
        return None
    text = raw.strip().lower()
    if text in MACHINE_WORDS:
        return SymbolicValue(MACHINE_WORDS[text])
    multiple = _MULTIPLE.match(text)
    return SymbolicValue("multiple", float(multiple.group(1))) if multiple else None


def value_problem(knob: Knob, raw: object) -> str | None:
    """Why no job could take `raw` as `knob`'s value, or None where some job could."""
    if symbolic_value(raw) is not None or (knob.type == "str" and not knob.choices):
        return None
    forms = ", ".join(repr(word) for word in MACHINE_WORDS) + " or 'Nx'"
    if knob.type == "str":
        fits = str(raw) in knob.choices
        wanted = f"one of {', '.join(knob.choices)}"
    elif knob.type == "bool":
        fits = isinstance(raw, bool) or str(raw).strip().lower() in TRUE_WORDS | FALSE_WORDS
        wanted = "true or false"
    else:
        number = _number(raw)
        fits = (
            number is not None
            and math.isfinite(number)
            and (knob.type == "float" or number == int(number))
        )
        wanted = f"{'a whole number' if knob.type == 'int' else 'a number'}, {forms}"
    return None if fits else f"{raw!r} is not a value of {knob.name} ({wanted})"


def _number(raw: object) -> float | None:
    if isinstance(raw, bool):
        return None
    try:
        return float(raw) if isinstance(raw, int | float | str) else None
    except ValueError:
        return None
