"""`diff`'s `changes.settings`: what differs between the two runs' settings, before any figure.

In the contract's order: the command line (token by token, a changed value named by the flag
before it), the environment variables that bear on speed, torchtop's overrides, then what the
agents recorded (the DataLoader, threads, device, precision, compile) and the script's options
whose change the command line does not already show (a default changed in the code). Each is
`{"what", "name", "a", "b"}`, a side without the setting null. A side that recorded no settings
(a trace, an older report) gives none to compare, and `settings_recorded` says so: nothing is
inferred for it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from torchtop.model.diff import Document

LOADER_KEYS = ("num_workers", "pin_memory", "batch_size", "persistent_workers", "prefetch_factor")
THREAD_KEYS = (
    "torch_num_threads", "torch_interop_threads", "omp_num_threads_env", "omp_proc_bind_env",
    "usable_cores", "openmp_runtime",
)  # fmt: skip
WHOLE_KEYS = ("device", "amp", "compiled")
WORKER_ONLY_KEYS = ("prefetch_factor", "persistent_workers")
ECHOES = {
    "threads.omp_num_threads_env": "OMP_NUM_THREADS",
    "threads.omp_proc_bind_env": "OMP_PROC_BIND",
}
"""Recorded settings that are an environment variable as the job saw it: said once, as the
variable, where the environment was compared."""


def settings_change(a: Document, b: Document) -> list[Document]:
    sa, sb = a.get("settings"), b.get("settings")
    found = command_change(a.get("source", {}).get("command"), b.get("source", {}).get("command"))
    if isinstance(sa, dict) and isinstance(sb, dict):
        _name_options(found, sa, sb)
        if sa.get("env") is not None and sb.get("env") is not None:
            found += _tables("environment", "", sa["env"], sb["env"])
        found += _tables("override", "", sa.get("overrides") or {}, sb.get("overrides") or {})
        if sa.get("agent") and sb.get("agent"):
            shown = {e["name"] for e in found if e["what"] == "environment"}
            found += [e for e in _recorded(sa, sb) if ECHOES.get(e["name"]) not in shown]
            found += _options(sa, sb, found)
    return found


def settings_recorded(report: Document) -> bool:
    """Whether the report carries a run's settings (a trace's, or an older report's, do not)."""
    return isinstance(report.get("settings"), dict)


def command_change(a: list[str] | None, b: list[str] | None) -> list[Document]:
    """The command lines' differing stretches, each named by the flag it is the value of
    (`-j`: `0` -> `2`), by its flag where the flag itself came or went, else by position."""
    if not a or not b or a == b:
        return []
    found = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("insert", "delete") and _flag_groups(a[i1:i2] or b[j1:j2]):
            found += _flags_entries(_flag_groups(a[i1:i2] or b[j1:j2]), given_in_b=tag == "insert")
        elif tag != "equal":
            found.append(_command_entry(a, i1, a[i1:i2], b[j1:j2]))
    return found


def _flag_groups(tokens: list[str]) -> list[list[str]]:
    """`--num-workers 4 --amp` as `[["--num-workers", "4"], ["--amp"]]`; [] unless it opens
    with a flag."""
    if not tokens or not tokens[0].startswith("-"):
        return []
    groups: list[list[str]] = []
    for token in tokens:
        if token.startswith("-") and not _is_number(token):
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def _flags_entries(groups: list[list[str]], given_in_b: bool) -> list[Document]:
    """Flags given on one side only, each named by itself: its value, or the flag where it
    takes none (`--amp`), on the side that gives it."""
    entries = []
    for flag, *values in groups:
        said = " ".join(values) or flag
        a, b = (None, said) if given_in_b else (said, None)
        entries.append(_entry("command", flag, a, b))
    return entries


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _command_entry(a: list[str], at: int, old: list[str], new: list[str]) -> Document:
    if len(old) == len(new) == 1 and "=" in old[0] and "=" in new[0]:
        flag_a, value_a = old[0].split("=", 1)
        flag_b, value_b = new[0].split("=", 1)
        if flag_a == flag_b and flag_a.startswith("-"):
            return _entry("command", flag_a, value_a, value_b)
    said_a, said_b = " ".join(old) or None, " ".join(new) or None
    if at > 0 and a[at - 1].startswith("-") and not (old or new)[0].startswith("-"):
        return _entry("command", a[at - 1], said_a, said_b)
    return _entry("command", f"argv[{at}]", said_a, said_b)


def _name_options(found: list[Document], sa: Document, sb: Document) -> None:
    """A command change whose flag is an option of the script's parser is given the option's
    `dest` (`-j` is `workers`), so that its change can be matched with a recorded setting."""
    dests = {
        flag: option["dest"]
        for side in (sa, sb)
        for option in side.get("options") or []
        for flag in option.get("flags") or []
    }
    for entry in found:
        if entry["name"] in dests:
            entry["option"] = dests[entry["name"]]


def _recorded(sa: Document, sb: Document) -> Iterator[Document]:
    for table, keys in (("dataloader", LOADER_KEYS), ("threads", THREAD_KEYS)):
        ta, tb = sa.get(table) or {}, sb.get(table) or {}
        for key in keys:
            if ta.get(key) != tb.get(key) and not _follows_workers(key, ta, tb):
                yield _entry("recorded", f"{table}.{key}", ta.get(key), tb.get(key))
    for key in WHOLE_KEYS:
        if sa.get(key) != sb.get(key):
            yield _entry("recorded", key, sa.get(key), sb.get(key))


def _follows_workers(key: str, ta: Document, tb: Document) -> bool:
    """`prefetch_factor` and `persistent_workers` have no value without workers: PyTorch sets
    the first (None -> 2) as `num_workers` leaves 0, which is that change, not another."""
    if key not in WORKER_ONLY_KEYS:
        return False
    return any(t.get("num_workers") == 0 and t.get(key) in (None, False) for t in (ta, tb))


def _options(sa: Document, sb: Document, found: list[Document]) -> list[Document]:
    """Options whose value differs where the command line does not show it."""
    shown = {e.get("option") for e in found if e["what"] == "command"}
    oa = {o["dest"]: o.get("value") for o in sa.get("options") or []}
    ob = {o["dest"]: o.get("value") for o in sb.get("options") or []}
    if not oa or not ob:
        return []
    return [
        _entry("option", dest, oa.get(dest), ob.get(dest))
        for dest in dict.fromkeys([*oa, *ob])
        if oa.get(dest) != ob.get(dest) and dest not in shown
    ]


def _tables(what: str, prefix: str, ta: Document, tb: Document) -> list[Document]:
    return [
        _entry(what, prefix + name, ta.get(name), tb.get(name))
        for name in sorted({*ta, *tb})
        if ta.get(name) != tb.get(name)
    ]


def _entry(what: str, name: str, a: object, b: object) -> Document:
    return {"what": what, "name": name, "a": a, "b": b}
