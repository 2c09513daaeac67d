"""The job under the dashboard, and a fix tried on it: plan, A/B trial, relaunch, follow.

`run` and `demo` launch the job; `WatchedJob` knows what it runs with (a `LaunchPlan`: the
user's command at first) and, when the user accepts a fix in the dashboard, plans it as `tune`
does (`plan_fix` on the current plan, with the agent's settings and argv and the live report's
metrics) and tries it in the same A/B trial (`run_trial`, written to `RUN/trials/NN.json`).
The watched job is stopped first, so the measured runs have the machine to themselves and both
variants are measured alike (a measurement of the watched job itself would include the
collectors' and the profiler windows' cost, which the variant's runs do not pay). Then the job
is started again into `RUN/jobs/NN/`, with the fix when it was kept, else as it ran, and the
monitor follows that folder. Whatever the outcome, a job runs afterwards; only quitting during
the trial (`cancel`) stops the run being measured and starts nothing.

`try_fix` blocks for the whole trial (tens of seconds): the dashboard calls it from a worker
thread and hears of its progress through `on_event`.

After a kept fix, `since_relaunch` holds the relaunched job's steps against the trial
(`trials.tracked`, `trials.holding`) and `revert` takes the fix back: the job is stopped and
started again with the plan it ran before the trial, recorded in `RUN/reverts.jsonl`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import msgspec

from torchtop.advice.machine import Machine, this_machine
from torchtop.advice.plan import initial_plan, plan_fix
from torchtop.assess.session import with_session_verdict
from torchtop.jobs.env import PERIODIC
from torchtop.jobs.job import Job, Output, start_plan
from torchtop.live.collect import Collectors, start_collectors
from torchtop.live.watch import LiveMonitor
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan
from torchtop.model.report import Report
from torchtop.model.trials import (
    Holding,
    Proposal,
    RevertOutcome,
    Stage,
    Trial,
    TrialEvent,
    TrialOutcome,
)
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import Settings
from torchtop.runs.state import RunState
from torchtop.trials.handle import TrialCancelled, TrialHandle
from torchtop.trials.holding import HoldingTest
from torchtop.trials.measure import MeasureError, main_process
from torchtop.trials.tracked import FixTracker
from torchtop.trials.trial import (
    TrialSettings,
    next_trial_number,
    predicted_gain,
    run_trial,
    trial_entry,
)
from torchtop.tuning.tune import TuneOptions

CANCEL_WAIT_S = 30.0
CANCEL_POLL_S = 0.1


class WatchedJob:
    """The launched job, what it runs with, the trials tried on it and its collectors."""

    def __init__(
        self,
        monitor: LiveMonitor,
        job: Job,
        collectors: Collectors,
        command: Sequence[str],
        run_root: Path,
        kind: str = "run",
        options: TuneOptions | None = None,
        machine: Machine | None = None,
        holding_test: HoldingTest | None = None,
    ) -> None:
        self.monitor = monitor
        self.job = job
        self.collectors = collectors
        self.plan = initial_plan(command, os.environ, os.getcwd())
        self.run_root = run_root
        self.kind = kind
        self.options = options or TuneOptions()
        self.trials: list[Trial] = []
        self._machine = machine
        self._lock = threading.Lock()
        self._handle = TrialHandle()
        """Every trial's runs are registered here; once cancelled, nothing starts again."""
        self._idle = threading.Event()
        self._idle.set()
        self.tracker = FixTracker(run_root, holding_test or self._holding_test())

    def propose(self, fix: Fix, report: Report) -> Proposal:
        """Plan `fix` on the job as it runs now, as `tune` would."""
        settings, argv = self.monitor.read(_agent_records)
        self._machine = self._machine or this_machine()
        planned = plan_fix(
            fix,
            self.plan,
            settings,
            self._machine,
            bindings=self.options.bindings,
            allow=self.options.allow,
            metrics=report.job.metrics,
            argv=argv,
        )
        gain = predicted_gain(report, fix.knob)
        return replace(Proposal.of(fix, self.plan, planned), predicted_gain=gain)

    def try_fix(self, proposal: Proposal, on_event: Callable[[TrialEvent], None]) -> TrialOutcome:
        """Stop the job, run the A/B trial, start the job again (with the fix if kept)."""
        if proposal.after is None or proposal.before != self.plan:
            raise ValueError("the proposal does not apply to the job as it runs now")
        with self._lock:
            # Once `cancel` was called nothing starts; before it, `cancel` waits for this trial.
            if self._handle.cancelled:
                return TrialOutcome(None, None, None, cancelled=True)
            self._idle.clear()
        try:
            outcome = self._try(proposal.before, proposal.after, on_event, proposal.predicted_gain)
        finally:
            self._idle.set()
        self._track(outcome.plan, outcome.run_dir)
        return outcome

    def cancel(self, timeout_s: float = CANCEL_WAIT_S) -> bool:
        """End a trial in progress: stop the run being measured, start nothing; wait for it.

        True once no trial is running. The handle signals the run it holds (a run registered
        later is signalled as it registers); each sweep escalates to SIGKILL once due."""
        with self._lock:
            self._handle.cancel()
        deadline_s = time.monotonic() + timeout_s
        while not self._idle.wait(CANCEL_POLL_S):
            self._handle.cancel()
            if time.monotonic() > deadline_s:
                return False
        return True

    def with_trials(self, report: Report) -> Report:
        """`report` with the trials decided here, as the contract's `trials` entries; where the
        job as it now runs has no verdict yet (quit right after a revert), the session's: the
        newest folder of the run that ran the same settings (`assess.session`)."""
        if not self.trials:
            return report
        self.since_relaunch()
        report = msgspec.structs.replace(
            report,
            trials=tuple(
                self.tracker.entry(t, trial_entry(t, with_steps=False)) for t in self.trials
            ),
        )
        now = self.job.layout.root
        tree, context = self.monitor.tree, self.monitor.context
        return with_session_verdict(report, self.run_root, now, tree, context)

    def since_relaunch(self) -> Holding | None:
        """The job with a kept fix, judged against its trial so far; None when none runs."""
        return self.tracker.check(self.monitor.read)

    @property
    def revertible(self) -> Trial | None:
        """The kept trial whose fix the job runs with now, which `revert` would take back."""
        relaunch = self.tracker.current
        return relaunch.trial if relaunch is not None else None

    def revert(self, on_event: Callable[[TrialEvent], None]) -> RevertOutcome:
        """Stop the job and start it again with the plan it ran before the kept fix."""
        relaunch = self.tracker.current
        if relaunch is None or relaunch.trial.plan_after != self.plan:
            raise ValueError("the job does not run with a kept fix")
        with self._lock:
            if self._handle.cancelled:
                return RevertOutcome(relaunch.trial, None, None, None, cancelled=True)
            self._idle.clear()
        try:
            holding = self.since_relaunch()
            on_event(Stage("stopping the job, to start it again without the fix"))
            self._stop_watched()
            if self._handle.cancelled:
                return RevertOutcome(relaunch.trial, None, None, holding, cancelled=True)
            plan = relaunch.trial.plan_before
            on_event(Stage("starting the job without the fix"))
            folder = self._start(plan)
            self.tracker.revert(relaunch, holding, folder)
        finally:
            self._idle.set()
        self._track(plan, folder)
        return RevertOutcome(relaunch.trial, plan, folder, holding)

    def _track(self, plan: LaunchPlan | None, run_dir: Path | None) -> None:
        if plan is not None and run_dir is not None:
            self.tracker.started(plan, run_dir, self.trials)

    def _holding_test(self) -> HoldingTest:
        # The relaunched job is judged with the trial's own warm-up.
        return HoldingTest(warmup_steps=self.options.warmup_steps)

    def close(self) -> None:
        """Stop the collectors of the job that runs now (the monitor stops the job itself)."""
        self.collectors.stop()
        self.collectors = Collectors()

    def _try(
        self,
        before: LaunchPlan,
        after: LaunchPlan,
        say: Callable[[TrialEvent], None],
        gain: float | None = None,
    ) -> TrialOutcome:
        folder = RunLayout(self.run_root).trial_dir(next_trial_number(self.run_root))
        say(Stage("stopping the job, so that the trial's runs have the machine alone"))
        self._stop_watched()
        trial, error = None, None
        try:
            if not self._handle.cancelled:
                say(Stage("measuring the job as it ran, then with the fix"))
                trial = run_trial(
                    before,
                    after,
                    self.options.steps,
                    self.options.warmup_steps,
                    self.run_root,
                    self.options.run_timeout_s,
                    settings=self._trial_settings(),
                    on_event=say,
                    predicted_gain=gain,
                    handle=self._handle,
                )
        except TrialCancelled as cancelled:
            if cancelled.trial is not None:  # in the report, and in NN-cancelled.json
                self.trials.append(cancelled.trial)
        except MeasureError as exc:
            error = f"the job could not be measured as it ran: {exc}"
        except OSError as exc:
            error = f"a measured run could not start: {exc}"
        if self._handle.cancelled:
            return TrialOutcome(None, None, None, cancelled=True)
        if trial is None:
            _set_aside(folder)
        else:
            self.trials.append(trial)
        plan = after if trial is not None and trial.kept else before
        say(Stage("starting the job " + ("with the fix" if plan is after else "as it ran")))
        return TrialOutcome(trial, plan, self._start(plan), error)

    def _trial_settings(self) -> TrialSettings:
        return dashboard_trial_settings(self.options)

    def _stop_watched(self) -> None:
        self.monitor.detach()
        self.close()
        self.job.finish()

    def _start(self, plan: LaunchPlan) -> Path:
        """Start `plan` as `torchtop run` would (periodic profiler windows, its output in the
        folder's `job.log`, which `o` follows, with its stderr also alone in `stderr.log`)."""
        folder = _next_folder(RunLayout(self.run_root).jobs_dir)
        job = start_plan(plan, folder, self.kind, PERIODIC, Output.log(RunLayout(folder).job_log))
        self.job, self.plan = job, plan
        self.collectors = start_collectors(job.layout, job.pid, with_agent=True)
        self.monitor.follow(folder, job)
        return folder


def dashboard_trial_settings(options: TuneOptions) -> TrialSettings:
    """The dashboard's trial decides by `tune`'s rule with `tune`'s settings (one rule,
    `trials.decision`); only its runs' output is always captured, so that it does not land on
    the dashboard's screen."""
    return replace(options.trial_settings(), capture_output=True)


def _agent_records(state: RunState) -> tuple[Settings | None, tuple[str, ...] | None]:
    """The main process's `settings` record and argv, out of the live state (a new record
    replaces the old one, never changes it, so the tick thread can go on folding them in)."""
    process = main_process(state)
    if process is None:
        return None, None
    return process.settings, process.argv


def _set_aside(folder: Path) -> None:
    """Rename the runs of a trial that wrote no `NN.json`, so the next trial, numbered from the
    `NN.json` files, does not measure into a folder holding another run's records."""
    if not folder.is_dir():
        return
    count = 1
    while (aside := folder.with_name(f"{folder.name}-unfinished-{count}")).exists():
        count += 1
    folder.rename(aside)


def _next_folder(parent: Path) -> Path:
    taken = [int(p.name) for p in parent.glob("*") if p.name.isdigit()]
    return parent / f"{max(taken, default=0) + 1:02d}"
