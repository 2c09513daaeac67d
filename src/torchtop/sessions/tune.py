"""`torchtop tune [--allow ...] [--for S] [--write PATH] -- COMMAND` as a use case.

Progress (the baseline, each plan before it is launched, each trial's measurements and
decision) goes to stderr as it happens; the summary, with the final command line and
environment, to stdout at the end: tune has no dashboard, so `--headless` changes nothing. The
tuned setup is written to `torchtop.toml` (or `--write PATH`), the report with its `trials` to
`RUN/report.json` (and `--report FILE`); RUN is `--run-dir`, by default
`./torchtop-runs/<timestamp>` as for the other verbs. Bad input (no command, a command not
found, an unknown `--allow` group, a `--for` that is not a positive number) raises
`InputError`, which the CLI turns into exit status 2. A job that cannot be measured as given is
said on stderr: when it crashed, its own exit status is tune's; when it merely ran too few
steps, the status is 2. With `--tensorboard [DIR]` each trial's before and after is written
as TensorBoard event files the moment it is decided, and the outcome at the end.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from torchtop.diagnosis.rules import RuleTree
from torchtop.errors import EXIT_INTERRUPTED, InputError, positive_seconds
from torchtop.jobs.interrupt import terminate_as_interrupt
from torchtop.jobs.records import default_run_dir
from torchtop.model.knobs import ALLOW_GROUPS
from torchtop.report.ending import TAIL_SHOWN
from torchtop.runs.journal import write_once
from torchtop.runs.layout import RunLayout
from torchtop.trials.measure import MeasureError
from torchtop.tuning.summary import render_summary, tune_report
from torchtop.tuning.tune import DEFAULT_BUDGET_S, INTERRUPTED, TuneOptions, TuneResult, tune
from torchtop.tuning.tuned import TUNED_FILE, load_tuned, write_tuned

if TYPE_CHECKING:
    from torchtop.exporters.tensorboard import TensorBoardLog

_DEFAULTS = TuneOptions()


@dataclass(frozen=True)
class TuneCommand:
    allow: frozenset[str] = frozenset()
    budget_s: float = DEFAULT_BUDGET_S
    """`--for` (or its older name `--budget`): the baseline and every trial within it."""
    write: Path | None = None
    """Where `torchtop.toml` goes (default: the current directory)."""
    run_dir: Path | None = None
    report: str | None = None
    output_format: str = "text"
    """`--format json`: the JSON report on stdout instead of the summary."""
    steps: int = _DEFAULTS.steps
    warmup_steps: int = _DEFAULTS.warmup_steps
    min_duration_s: float = _DEFAULTS.min_duration_s
    max_trials: int = _DEFAULTS.max_trials
    tensorboard: str | None = None
    """`--tensorboard [DIR]`: trials and the outcome as event files ("": `RUN/tensorboard`)."""


def parse_allow(text: str | None) -> frozenset[str]:
    """`--allow batch-size,precision` -> the groups, checked against the catalogue's."""
    groups = frozenset(g.strip() for g in (text or "").split(",") if g.strip())
    unknown = sorted(groups - set(ALLOW_GROUPS))
    if unknown:
        raise InputError(
            "--allow", f"unknown group {', '.join(unknown)}: choose from {', '.join(ALLOW_GROUPS)}"
        )
    return groups


def parse_budget(text: str | None) -> float:
    """`--for 150` (or `--budget 150`) -> 150.0 seconds; not given -> the default."""
    return DEFAULT_BUDGET_S if text is None else positive_seconds("--for/--budget", text)


def tune_session(command: Sequence[str], options: TuneCommand, tree: RuleTree) -> int:
    if not command:
        raise InputError(
            "command",
            "nothing to tune: give it after `--`, e.g. `torchtop tune -- python train.py`",
        )
    toml_path = options.write or Path.cwd() / TUNED_FILE
    run_dir = options.run_dir or default_run_dir()
    print(f"torchtop tune: recording to {run_dir}", file=sys.stderr)
    tune_options = TuneOptions(
        budget_s=options.budget_s,
        steps=options.steps,
        warmup_steps=options.warmup_steps,
        min_duration_s=options.min_duration_s,
        max_trials=options.max_trials,
        allow=options.allow,
        bindings=load_tuned(toml_path).bind,
    )
    board = _tensorboard(options.tensorboard, run_dir)

    def on_event(message: str) -> None:
        _progress(message)
        if board is not None:
            board.write_trials(time.time())  # a trial just decided is on the board at once

    try:
        with terminate_as_interrupt():
            result = tune(command, tune_options, tree, run_dir, on_event=on_event)
        if board is not None:
            _board_ending(board, result)
    except FileNotFoundError:
        raise InputError(command[0], "command not found") from None
    except MeasureError as exc:
        return _unmeasurable(exc)
    except KeyboardInterrupt:  # before the baseline was measured: nothing to keep
        print(
            f"torchtop tune: interrupted before the job's baseline was measured; nothing was "
            f"tried, {toml_path.name} is unchanged (the run so far: {run_dir})",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    finally:
        if board is not None:
            board.close()
    write_tuned(toml_path, result)
    document = tune_report(result)
    write_once(RunLayout(run_dir).report_json, document)
    if options.report:
        write_once(Path(options.report), document)
    if options.output_format == "json":
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(render_summary(result, toml_path))
    sys.stdout.flush()
    return EXIT_INTERRUPTED if result.stopped_because == INTERRUPTED else 0


def _tensorboard(option: str | None, run_dir: Path) -> TensorBoardLog | None:
    if option is None:
        return None
    from torchtop.exporters.tensorboard import DEFAULT_FOLDER, TensorBoardLog

    folder = Path(option) if option else run_dir / DEFAULT_FOLDER
    print(f"torchtop tune: TensorBoard event files in {folder}", file=sys.stderr)
    return TensorBoardLog(folder, run_dir)


def _board_ending(board: TensorBoardLog, result: TuneResult) -> None:
    """The last trials, the rates before and after tuning, the verdict on the tuned job."""
    from torchtop.exporters.tb_events import scalar_value

    board.write_trials(time.time())
    if result.report is None:
        return
    rates = {
        "tune/baseline_steps_per_s": result.baseline.steps_per_s,
        "tune/final_steps_per_s": result.final_steps_per_s,
    }
    board.write_verdict_text(result.report.verdict, [scalar_value(k, v) for k, v in rates.items()])


def _unmeasurable(error: MeasureError) -> int:
    """The job as given could not be measured: its own failure is its exit status, else 2."""
    print(f"torchtop tune: the job could not be measured as given: {error}", file=sys.stderr)
    ending = error.ending
    if ending.how in ("crashed", "killed") and isinstance(ending.stderr_tail, list):
        # Its own last words (a traceback, "can't open file"), so the cause is on screen.
        print("torchtop tune: the job's last lines on stderr:", file=sys.stderr)
        for line in ending.stderr_tail[-TAIL_SHOWN:]:
            print(f"  {line}", file=sys.stderr)
    status = error.ending.exit_status
    if error.ending.how == "crashed" and status is not None:
        return status
    if error.ending.how == "killed":
        return 1
    return 2


def _progress(message: str) -> None:
    for line in message.splitlines():
        print(f"torchtop tune: {line}", file=sys.stderr, flush=True)
