"""`diff`'s `changes.moved`: where the step time moved, split between the parts of the step the
changed settings touch and the rest.

Each side's category time per step is its breakdown share times its mean step (the shares are
the report's: a run's newest profiler window, or its DataLoader wait alone before one). A
setting touches the categories `TOUCHES` gives it (`num_workers` the DataLoader, thread counts
the host's math, NCCL's variables the collectives); one whose reach is not known (a command-line
change no recorded setting explains, `PYTORCH_*`, the batch size, the device) could touch all of
the step, and then the time is not split. So "B is 18% faster" is said with how much of it lies
where the change acts, and how much elsewhere: another cause, such as the machine's load.
"""

from __future__ import annotations

import re

from torchtop.model.diff import Document

ALL = (
    "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other",
)  # fmt: skip
HOST_MATH = ("cpu_exec", "kernel", "other")
COMPUTE = ("kernel", "memcpy", "memset", "runtime", "cpu_exec", "other")
THREAD_KNOBS = (
    "torch_num_threads", "torch_interop_threads", "omp_num_threads_env", "omp_proc_bind_env",
    "openmp_runtime",
)  # fmt: skip
TOUCHES: dict[str, tuple[str, ...]] = {
    "dataloader.num_workers": ("dataloader",),
    "dataloader.persistent_workers": ("dataloader",),
    "dataloader.prefetch_factor": ("dataloader",),
    "dataloader.pin_memory": ("dataloader", "memcpy"),
    **{f"threads.{key}": HOST_MATH for key in THREAD_KNOBS},
    "threads.usable_cores": (*HOST_MATH, "dataloader"),
    "amp": COMPUTE,
    "compiled": COMPUTE,
}
ENV_TOUCHES = (
    (re.compile(r"^(OMP|KMP|GOMP|MKL|OPENBLAS|BLIS|DNNL|ONEDNN)_"), HOST_MATH),
    (re.compile(r"^(NCCL|GLOO)_"), ("communication",)),
    (re.compile(r"^(CUDA|CUBLAS|CUBLASLT|CUDNN|NVIDIA_TF32)_"), COMPUTE),
)
MOST = 0.5
"""The touched parts explain the change when they hold at least this much of it."""


def moved_change(a: Document, b: Document, settings: list[Document], known: bool) -> Document:
    """`known`: both sides recorded their settings (no setting differing then means none did)."""
    mean_a = (a.get("steps") or {}).get("mean_ms")
    mean_b = (b.get("steps") or {}).get("mean_ms")
    ba, bb = a.get("breakdown") or {}, b.get("breakdown") or {}
    if not (mean_a and mean_b and ba and bb):
        return {"available": False, "why": "a side has no mean step or no breakdown"}
    categories = {
        key: _category(ba.get(key), bb.get(key), mean_a, mean_b)
        for key in dict.fromkeys([*ba, *bb])
    }
    touched, by = touched_categories(settings)
    total = mean_b - mean_a
    inside = sum(c["change_ms"] for k, c in categories.items() if k in (touched or ()))
    return {
        "available": True,
        "step_change_ms": round(total, 3),
        "step_change_pct": round(total / mean_a * 100, 2),
        "settings_known": known,
        "touched": sorted(touched, key=ALL.index) if touched is not None else None,
        "by": by,
        "touched_change_ms": None if touched is None else round(inside, 3),
        "rest_change_ms": None if touched is None else round(total - inside, 3),
        "categories": categories,
        "basis": "each side's breakdown share times its mean step",
    }


def _category(sa: float | None, sb: float | None, mean_a: float, mean_b: float) -> Document:
    a_ms, b_ms = (sa or 0.0) * mean_a, (sb or 0.0) * mean_b
    return {"a_ms": round(a_ms, 3), "b_ms": round(b_ms, 3), "change_ms": round(b_ms - a_ms, 3)}


def touched_categories(settings: list[Document]) -> tuple[set[str] | None, list[str]]:
    """The categories the differing settings touch (None: one could touch all of the step),
    and the settings that did the touching, by name."""
    recorded = [e for e in settings if e["what"] in ("recorded", "override", "environment")]
    touched: set[str] = set()
    by: list[str] = []
    for entry in settings:
        reach = _reach(entry, recorded)
        if reach is None:
            return None, [_label(entry)]
        if reach:
            touched.update(reach)
            by.append(_label(entry))
    return touched, list(dict.fromkeys(by))


def _reach(entry: Document, recorded: list[Document]) -> tuple[str, ...] | None:
    """The categories one differing setting touches; () where a recorded setting that also
    differs already stands for it (a command-line `--workers` for `dataloader.num_workers`)."""
    what, name = entry["what"], entry["name"]
    if what == "recorded":
        return TOUCHES.get(name)
    if what == "environment":
        return next((reach for pattern, reach in ENV_TOUCHES if pattern.match(name)), None)
    if what == "override":
        knob = name.removeprefix("env.")
        if knob != name:
            return _reach({"what": "environment", "name": knob}, recorded)
        return TOUCHES.get(knob) or TOUCHES.get(knob.split(".")[0])
    option = entry.get("option") or (name if what == "option" else None)
    if option is not None and any(_same_setting(option, r["name"]) for r in recorded):
        return ()
    return None


def _same_setting(option: str, setting: str) -> bool:
    """`workers` and `dataloader.num_workers`, `batch_size` and `dataloader.batch_size`."""
    short = re.sub(r"[^a-z0-9]", "", option.lower())
    last = re.sub(r"[^a-z0-9]", "", setting.split(".")[-1].lower())
    return short == last or (len(short) >= 4 and (short in last or last in short))


def _label(entry: Document) -> str:
    return entry["name"] if entry["what"] != "command" else f"command {entry['name']}"
