"""Start a job with the agent inside it, and stop it without leaving a process behind.

`start` runs a command in a process group of its own (so `torchrun` and every worker it
starts can be signalled together), in the caller's environment with the agent on
(`jobs.env`), its stdout on the user's terminal or in a file, its stderr always in a file
(copied on to the terminal or the merged log, `jobs.stderr`; a Python job writing to a
file does so unbuffered, as to a terminal, unless its environment says otherwise), and records
the launch (`run.json`). The job starts with SIGINT at its default even where torchtop was
started with it ignored (by a script's `&`, without job control): it has a session of its own,
out of the terminal's reach, and the SIGINT it gets is torchtop's graceful stop, which an
ignored SIGINT would turn into a SIGTERM that skips the job's cleanup. `start_plan` does the
same for a `LaunchPlan`: its command, working directory, whole environment, overrides and the
fixes applied on the way to it.

`Job.stop` is SIGINT to the group (a KeyboardInterrupt lets the job's own cleanup run; the
stop is marked first, `RUN/requests/stop`, so the job says it in one line, not a traceback), then
SIGTERM, then SIGKILL, each after a grace period; then the survivors of the tree listed before
the first signal are killed (`jobs.processes`). `Job.record_exit` writes how the job ended, as
its parent saw it: in `exit.json` with the last lines of its stderr, and as the `bye` of its
agent's journal where the agent's own (written at Python exit) says otherwise: a process that
aborts in its C++ teardown, after Python's exit, is SIGABRT, not the `exit 0` it wrote.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from torchtop.agent.children import bye_of_returncode, record_end
from torchtop.jobs.env import ON_REQUEST, PERIODIC, Windows, job_environment
from torchtop.jobs.processes import job_tree, kill_survivors, signal_group
from torchtop.jobs.records import write_exit_record, write_run_record
from torchtop.jobs.stderr import StderrCopy, stderr_tail
from torchtop.model.plan import AppliedFix, LaunchPlan
from torchtop.runs.identity import NodeIdentity
from torchtop.runs.layout import RunLayout
from torchtop.runs.output_tail import stderr_marks
from torchtop.runs.records import ExitRecord

STOP_GRACE_S = 5.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)

Stream = IO[bytes] | int | None
"""A standard stream as `subprocess.Popen` takes it: a file, `subprocess.STDOUT`, or inherited."""


@dataclass(frozen=True)
class Output:
    """Where the job's stdout and stderr go (appended). Stdout: a file, or the user's terminal
    when None (its stderr with `stdout_on_stderr`, where torchtop's own stdout holds the
    report). Stderr: the file given, or else the run folder's `stderr.log`, copied on as it is
    written to where stdout goes (the terminal's stderr, or the same file), so the last lines
    of a failure can always be read back."""

    stdout: Path | None = None
    stderr: Path | None = None
    stdout_on_stderr: bool = False

    @classmethod
    def log(cls, path: Path) -> Output:
        """Both streams in one file (`run` and `demo` under the dashboard, which owns the
        terminal)."""
        return cls(path)

    @classmethod
    def in_folder(cls, run_dir: Path) -> Output:
        """`run_dir/stdout.log` and `run_dir/stderr.log` (measured runs, relaunched jobs)."""
        return cls(run_dir / "stdout.log", run_dir / "stderr.log")

    def open(self, files: contextlib.ExitStack, layout: RunLayout) -> Streams:
        """What `Popen` takes as stdout and stderr, open while `files` is; and how stderr is
        copied on."""
        stderr_path = self.stderr or layout.stderr_log
        stdout: Stream = _append(files, self.stdout)
        if stdout is None and self.stdout_on_stderr:
            stdout = 2  # the descriptor itself, as `copier` dups it: never a replaced sys.stderr
        stderr = _append(files, stderr_path)
        if self.stderr is not None:
            return Streams(stdout, stderr, stderr_path, log=stderr_path, echo=False)
        return Streams(stdout, stderr, stderr_path, log=self.stdout or stderr_path, echo=True)


@dataclass(frozen=True)
class Streams:
    """The job's open output files, where its whole output can be read (`log`: its stderr
    alone, where stdout is the terminal), and whether stderr is copied on to where stdout
    goes (`echo`)."""

    stdout: Stream
    stderr: Stream
    stderr_path: Path
    log: Path
    echo: bool

    def copier(self) -> StderrCopy | None:
        """The thread that copies stderr on: into stdout's file, or the terminal's stderr."""
        if not self.echo:
            return None
        if self.log != self.stderr_path:
            sink = os.open(self.log, os.O_WRONLY | os.O_APPEND)
            return StderrCopy(self.stderr_path, sink, stderr_marks(self.log))
        return StderrCopy(self.stderr_path, os.dup(2))


TERMINAL = Output()
BESIDE_REPORT = Output(stdout_on_stderr=True)
"""The job's whole output on the terminal's stderr: `run --headless`, whose stdout is the report."""


def _append(files: contextlib.ExitStack, path: Path | None) -> IO[bytes] | None:
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return files.enter_context(path.open("ab"))


@dataclass
class Job:
    """A launched command and how it ended."""

    command: list[str]
    layout: RunLayout
    process: subprocess.Popen[bytes]
    started_at: float
    stopped_by_us: bool = False
    ending: ExitRecord | None = None
    """`exit.json` as written, once the job was reaped (`record_exit`)."""
    streams: Streams | None = None
    """Where its output went (None: inherited, as a test's bare `Job` has it)."""
    copy: StderrCopy | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop the job and everything it started. A job that already ended by itself is not
        counted as stopped; what it left in its process group (a DataLoader worker that
        outlived it) is killed."""
        tree = []
        if self.process.poll() is None:
            self.stopped_by_us = True
            _ask_to_stop(self.layout)
            tree = job_tree(self.pid)
            for sig in STOP_SIGNALS:
                if self.process.poll() is not None:
                    break
                signal_group(self.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.process.wait(timeout=grace_s)
        signal_group(self.pid, signal.SIGKILL)
        kill_survivors(tree)

    def record_exit(self) -> ExitRecord:
        """Wait for the job, write `exit.json` and return it."""
        status = self.process.wait()
        if self.copy is not None:
            self.copy.stop()
        # The parent's word on how it ended wins over what its agent wrote at Python's exit.
        record_end(self.layout.agent_events(self.pid), bye_of_returncode(status))
        signal_name = signal.Signals(-status).name if status < 0 else None
        if self.stopped_by_us:
            how = "stopped"
        elif signal_name:
            how = "killed"
        else:
            how = "exited" if status == 0 else "crashed"
        exit_status = status if status >= 0 else None
        duration_s = time.time() - self.started_at
        streams = self.streams
        tail = stderr_tail(streams.stderr_path) if streams is not None else None
        log = streams.log if streams is not None else None
        self.ending = write_exit_record(
            self.layout, how, exit_status, signal_name, duration_s, tail, log
        )
        return self.ending

    def finish(self, grace_s: float = STOP_GRACE_S) -> ExitRecord:
        """Stop the job (if it still runs) and record how it ended."""
        self.stop(grace_s)
        return self.record_exit()

    def shell_status(self) -> int:
        """The status a shell would report for the job: its code, or 128 + the signal."""
        status = self.process.wait()
        return status if status >= 0 else 128 - status


def _ask_to_stop(layout: RunLayout) -> None:
    """Say, before the first signal, that what follows is torchtop's stop: the job's processes
    then end an uncaught KeyboardInterrupt with one line, not a traceback that reads as a crash
    (`agent/bootstrap/sitecustomize.py`). Nothing else of the job changes: its cleanup runs and
    it exits by SIGINT as before. A folder that cannot take the mark costs only the quiet end."""
    with contextlib.suppress(OSError):
        layout.stop_request.parent.mkdir(parents=True, exist_ok=True)
        layout.stop_request.touch()


def line_by_line(env: Mapping[str, str] | None) -> dict[str, str]:
    """`env` (default: this process's) with Python's output unbuffered, unless it says
    otherwise: a Python job whose stdout is a file holds its prints in an 8 KiB buffer, so
    the `o` screen (and torchrun's `--tee` copy) would show them in late bursts, not as a
    terminal does."""
    whole = dict(env if env is not None else os.environ)
    whole.setdefault("PYTHONUNBUFFERED", "1")
    return whole


def start(
    command: Sequence[str],
    run_dir: Path,
    kind: str,
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    overrides: Mapping[str, object] | None = None,
    fixes: Sequence[AppliedFix] = (),
    windows: Windows = PERIODIC,
    output: Output = TERMINAL,
    agent: bool = True,
    node: NodeIdentity | None = None,
) -> Job:
    """Start `command` recorded into `run_dir` as a launch of `kind` (`run`, `demo`, `tune`).

    `env`: the job's whole environment before the agent's variables (default: this process's);
    `cwd`: where it runs (default: here). Without `agent` the job runs bare (a benchmark's
    baseline), still in its own group and still recorded; `node`: this launcher's node, in
    `run.json`, where several launchers share the run folder. Raises `FileNotFoundError` or
    `PermissionError` when the command cannot be run."""
    layout = RunLayout(run_dir)
    layout.create()
    base = dict(env) if env is not None else None
    job_env = job_environment(run_dir, base, overrides, windows) if agent else base
    if output.stdout is not None or output.stdout_on_stderr:
        job_env = line_by_line(job_env)
    with contextlib.ExitStack() as files:
        streams = output.open(files, layout)
        started_at = time.time()
        process = subprocess.Popen(
            list(command),
            env=job_env,
            cwd=cwd,
            stdout=streams.stdout,
            stderr=streams.stderr,
            start_new_session=True,
            preexec_fn=_sigint_at_its_default if _sigint_ignored() else None,
        )
    passed = overrides if agent else None
    write_run_record(
        layout, kind, command, process.pid, started_at, cwd, passed, fixes, node,
        env=job_env if job_env is not None else os.environ,
    )  # fmt: skip
    copy = streams.copier()
    return Job(list(command), layout, process, started_at, streams=streams, copy=copy)


def _sigint_ignored() -> bool:
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _sigint_at_its_default() -> None:
    """In the job's process, between fork and exec: an ignored signal stays ignored across exec,
    a default one does not. Only where SIGINT is ignored here, so other starts keep the fast path
    `subprocess` takes without a function to call in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_plan(
    plan: LaunchPlan,
    run_dir: Path,
    kind: str = "tune",
    windows: Windows = ON_REQUEST,
    output: Output | None = None,
) -> Job:
    """Start `plan` (its command, cwd, whole environment and overrides) into `run_dir`; its
    output goes to `run_dir/{stdout,stderr}.log` unless `output` says otherwise."""
    return start(
        plan.command,
        run_dir,
        kind,
        env=plan.env,
        cwd=plan.cwd,
        overrides=plan.overrides,
        fixes=plan.fixes,
        windows=windows,
        output=Output.in_folder(run_dir) if output is None else output,
    )
