"""A TensorBoard log folder of profiler traces, read as torch-tb-profiler reads it.

`torch.profiler.tensorboard_trace_handler(DIR/RUN)` writes `<worker>.<span>.pt.trace.json(.gz)`
files, and torch-tb-profiler calls every folder under its log folder that holds such a file a
run (named by its path from the log folder), each file a worker's span. A user who points
`torchtop analyze` at that log folder means one training run, not the union of all the runs
in it: merging them would average unrelated jobs into one rank. So a folder whose traces lie
in several runs is read as one of them: `--run NAME`, or else the newest, with a note naming
the others. Newest by the span in the file names where there is one (the Unix time in ms at
which `tensorboard_trace_handler` saved the trace: it survives a copy, which modification times
do not), else by when the file was last modified. A folder of one run reads the
same as before: all of its files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from torchtop.errors import InputError

WORKER_PATTERN = re.compile(r"^(.*?)(\.\d+)?\.pt\.trace\.json(?:\.gz)?$")
"""torch-tb-profiler's own pattern (`consts.WORKER_PATTERN`): worker name, optional span."""


@dataclass(frozen=True)
class LogRun:
    name: str
    files: tuple[Path, ...]

    @property
    def saved_ms(self) -> float:
        """When its newest trace was saved: the span in its name, else its modification time."""
        return max(_saved_ms(f) for f in self.files)


def _saved_ms(path: Path) -> float:
    match = WORKER_PATTERN.match(path.name)
    span = match.group(2) if match else None
    return float(span[1:]) if span else path.stat().st_mtime * 1000


@dataclass(frozen=True)
class ChosenRun:
    files: list[str]
    note: str | None


def log_runs(folder: Path) -> list[LogRun]:
    """Each folder under `folder` (itself included) holding profiler traces, by name."""
    by_folder: dict[Path, list[Path]] = {}
    for path in sorted(folder.rglob("*.pt.trace.json*")):
        if path.is_file() and WORKER_PATTERN.match(path.name):
            by_folder.setdefault(path.parent, []).append(path)
    return [LogRun(run_name(parent, folder), tuple(files)) for parent, files in by_folder.items()]


def run_name(run_dir: Path, folder: Path) -> str:
    """The run's name as torch-tb-profiler gives it: its path from the log folder."""
    return folder.name if run_dir == folder else run_dir.relative_to(folder).as_posix()


def choose_run(paths: list[str], choice: str | None) -> ChosenRun:
    """`paths` as the analysis should read them: one run's files when the one path given is a
    log folder of several runs; otherwise the paths unchanged."""
    folder = Path(paths[0]) if len(paths) == 1 else None
    runs = log_runs(folder) if folder is not None and folder.is_dir() else []
    if choice is None and len(runs) < 2:
        return ChosenRun(paths, None)
    if folder is None or not runs:
        raise InputError("--run", "names a run of one TensorBoard log folder of profiler traces")
    names = [r.name for r in runs]
    if choice is not None:
        chosen = next((r for r in runs if r.name == choice), None)
        if chosen is None:
            raise InputError(
                "--run", f"no run {choice!r} in {folder}; its runs: {', '.join(names)}"
            )
        return ChosenRun([str(f) for f in chosen.files], None)
    newest = max(runs, key=lambda r: (r.saved_ms, r.name))
    others = ", ".join(n for n in names if n != newest.name)
    note = (
        f"{folder} is a TensorBoard log folder of {len(runs)} runs: analysed {newest.name}, "
        f"the newest; the others ({others}) with --run NAME"
    )
    return ChosenRun([str(f) for f in newest.files], note)
