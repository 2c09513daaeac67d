"""Kernel names as people read them: Itanium-mangled names (`_ZN2ck16...`) demangled by the
system's `c++filt` (binutils), and a short form for a line that has no room for templates.

`c++filt` runs once per batch of names not seen before (one process, one name a line), and
each answer is kept for the life of the process; where it is missing or fails, a name stays as
it was. No Python package is pulled in for it: binutils is on nearly every Linux machine that
has a GPU driver, and a raw name is still a correct name. It runs where frames are built (the
tick thread, or once for `view`), never in a widget.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping

DEMANGLE_TIMEOUT_S = 5.0
_known: dict[str, str] = {}


def is_mangled(name: str) -> bool:
    return name.startswith("_Z")


def demangled(names: Iterable[str]) -> Mapping[str, str]:
    """Each mangled name of `names` with its demangled form (itself where c++filt cannot)."""
    wanted = {n for n in names if is_mangled(n)}
    new = sorted(n for n in wanted if n not in _known)
    if new:
        _known.update(zip(new, run_cxxfilt(new), strict=True))
    return {n: _known[n] for n in wanted}


def run_cxxfilt(names: list[str]) -> list[str]:
    """`names` through c++filt; without its recursion limit where it knows the option
    (binutils 2.32 on): deep templates (composable_kernel's) exceed the default limit."""
    tool = shutil.which("c++filt")
    if tool is None or any("\n" in n for n in names):
        return names
    for options in (["--no-recurse-limit"], []):
        try:
            done = subprocess.run(
                [tool, *options],
                input="\n".join(names) + "\n",
                capture_output=True,
                text=True,
                timeout=DEMANGLE_TIMEOUT_S,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        answers = done.stdout.splitlines()
        if len(answers) == len(names):
            return answers
    return names


def short_name(name: str) -> str:
    """`ck::device::kernel_gemm<…>(…)`: template arguments and parameters folded away."""
    out: list[str] = []
    depth = 0
    for char in name:
        if char in "<(":
            if depth == 0:
                out.append(char + "…")
            depth += 1
        elif char in ">)" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(char)
        elif depth == 0:
            out.append(char)
    return "".join(out)
