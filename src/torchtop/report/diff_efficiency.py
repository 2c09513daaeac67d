"""`diff`'s efficiency change: MFU and FLOPs per step on each side, and the operator shapes
whose achieved rate and roofline fraction moved, from the reports' `efficiency` sections.

A change in MFU says how much nearer the machine's limit B runs than A; the FLOPs per step say
whether the work itself changed (a bigger batch, a different model) or only its speed; the
operator shapes (name and input dims, as both reports recorded them) say where. Works on the
contract's JSON shape, like the rest of `diff`.
"""

from __future__ import annotations

from torchtop.model.diff import DiffSection, Document

SIDE_KEYS = ("device", "mfu", "mfu_dtype", "flops_per_step", "step_mean_ms")
OP_KEYS = ("calls", "time_us", "tflops_s", "tb_s", "roofline_fraction")
TOP_OPS = 8
LABEL_WIDTH = 56


def efficiency_change(a: Document, b: Document) -> Document:
    """Both sides' MFU and FLOPs per step, the MFU's change in points, B over A for the FLOPs,
    and the longest operator shapes (by B's time, then A's) side by side."""
    ea, eb = a.get("efficiency"), b.get("efficiency")
    if not ea or not eb:
        missing = " and ".join(s for s, e in (("A", ea), ("B", eb)) if not e)
        return {
            "available": False,
            "why": f"no efficiency in {missing} (it needs shapes: record_shapes=True, as "
            "torchtop's own profiler windows record)",
        }
    mfu_a, mfu_b = ea.get("mfu"), eb.get("mfu")
    return {
        "available": True,
        "a": {key: ea.get(key) for key in SIDE_KEYS},
        "b": {key: eb.get(key) for key in SIDE_KEYS},
        "mfu_change": None if mfu_a is None or mfu_b is None else round(mfu_b - mfu_a, 6),
        "flops_per_step_ratio": _ratio(eb.get("flops_per_step"), ea.get("flops_per_step")),
        "ops": _ops(ea.get("ops") or [], eb.get("ops") or []),
    }


def _ops(ops_a: list[Document], ops_b: list[Document]) -> list[Document]:
    by_a = {_key(op): op for op in ops_a}
    by_b = {_key(op): op for op in ops_b}
    order = sorted(
        dict.fromkeys([*by_a, *by_b]),
        key=lambda k: (
            -(by_b.get(k) or {}).get("time_us", 0.0),
            -(by_a.get(k) or {}).get("time_us", 0.0),
        ),
    )
    return [
        {
            "name": key[0],
            "input_dims": (by_b.get(key) or by_a[key]).get("input_dims"),
            "a": _op(by_a.get(key)),
            "b": _op(by_b.get(key)),
        }
        for key in order[:TOP_OPS]
    ]


def _key(op: Document) -> tuple[str, str]:
    return str(op.get("name")), repr(op.get("input_dims"))


def _op(op: Document | None) -> Document | None:
    return None if op is None else {key: op.get(key) for key in OP_KEYS}


def _ratio(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None or a == 0 else b / a


def efficiency_section(change: Document) -> DiffSection:
    """MFU, FLOPs per step, then each operator shape's TFLOP/s and roofline fraction, A and B."""
    title = "efficiency"
    if not change["available"]:
        return DiffSection(title, note=change["why"])
    a, b = change["a"], change["b"]
    moved = change["mfu_change"]
    points = "-" if moved is None else f"{moved * 100:+.2f} pts"
    flops = (_giga(a["flops_per_step"]), _giga(b["flops_per_step"]))
    rows = [
        ("MFU", _share(a["mfu"]), _share(b["mfu"]), points),
        ("GFLOP per step", *flops, _times(change["flops_per_step_ratio"])),
    ]
    for op in change["ops"]:
        label = _short(f"{op['name']} {op['input_dims']}")
        rows.append((label, _rate(op["a"]), _rate(op["b"]), ""))
    return DiffSection(title, ("", "A", "B", "change"), tuple(rows))


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2%}"


def _short(text: str) -> str:
    return text if len(text) <= LABEL_WIDTH else text[: LABEL_WIDTH - 1] + "…"


def _giga(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e9:,.2f}"


def _times(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}x"


def _rate(op: Document | None) -> str:
    """An operator shape's achieved TFLOP/s (TB/s for work of no FLOPs, a copy) and its share
    of the roofline."""
    if op is None or op.get("tflops_s") is None:
        return "-"
    roof = op.get("roofline_fraction")
    if op["tflops_s"] == 0 and op.get("tb_s") is not None:
        rate = f"{op['tb_s']:.3g} TB/s"
    else:
        rate = f"{op['tflops_s']:.3g} TFLOP/s"
    return rate + ("" if roof is None else f", {roof:.0%} of roof")
