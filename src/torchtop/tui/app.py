"""The dashboard app, and the two ways in: `run_live` (run, attach, demo) and `run_view` (view).

Live, a thread worker asks the snapshot source for a snapshot whenever the pacer allows (once a
second), turns it into a `Frame` off the UI thread and posts it; the app hands each frame down
to the panels ("attributes down, messages up"). Quitting, or a snapshot saying the run is over,
stops the worker, waits for it, and returns the source's final report. Widgets never call the
source or collectors; only the tick thread does.

With an `applier` (under `run` and `demo`), `a` applies the highlighted fix: the proposal is
planned and the trial run in thread workers (`tui.apply`), one trial at a time, while ticks go
on; quitting during a trial cancels it (its measured run is stopped) before the final report.
When the applier is also a `Reverter` and a fix was kept, each tick also judges the relaunched
job against the trial (`HoldingUpdate` to the trial panel), and `r` takes the fix back
(`tui.revert`), confirmed first, in a thread worker as a trial is.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import OptionList

from torchtop.model.findings import Fix
from torchtop.model.report import Report
from torchtop.model.trials import Proposal, TrialEvent, TrialOutcome
from torchtop.runs.output_tail import job_output
from torchtop.runs.state import RunState
from torchtop.tui.apply import (
    Applier,
    ApplyScreen,
    ProposalReady,
    TrialDone,
    TrialUpdate,
    why_not_applied,
)
from torchtop.tui.arrange import arrange
from torchtop.tui.dashscreen import DashboardScreen
from torchtop.tui.details import FixDetailsScreen
from torchtop.tui.frame import Frame, FrameBuilder, offline_frame
from torchtop.tui.helpscreen import HelpScreen
from torchtop.tui.outputscreen import OutputScreen
from torchtop.tui.ranking import rank_fixes
from torchtop.tui.revert import HoldingUpdate, RevertDone, Reverter, RevertScreen
from torchtop.tui.styles import CSS
from torchtop.tui.ticking import (
    FrameMessage,
    IntervalPacer,
    ModulesRequester,
    Pacer,
    SnapshotSource,
)
from torchtop.tui.widgets.devices import DevicesPanel
from torchtop.tui.widgets.efficiency import EfficiencyPanel
from torchtop.tui.widgets.filterbar import FilterBar
from torchtop.tui.widgets.fixlist import FixChosen, FixList
from torchtop.tui.widgets.folded import FoldedLine
from torchtop.tui.widgets.header import JobHeader
from torchtop.tui.widgets.jobend import JobEndPanel
from torchtop.tui.widgets.keysfooter import KeysFooter
from torchtop.tui.widgets.memory import MemoryPanel
from torchtop.tui.widgets.modules import ModulesPanel
from torchtop.tui.widgets.nodes import NodesPanel
from torchtop.tui.widgets.panel import Panel
from torchtop.tui.widgets.ranks import RanksPanel
from torchtop.tui.widgets.runclock import ClockFooter
from torchtop.tui.widgets.stacks import StacksPanel
from torchtop.tui.widgets.steptime import StepTimePanel
from torchtop.tui.widgets.tops import TopsPanel
from torchtop.tui.widgets.trial import TrialPanel, TrialView
from torchtop.tui.widgets.trialclock import TrialClock
from torchtop.tui.widgets.verdict import VerdictPanel
from torchtop.tui.widgets.wholerun import RunTimelinePanel

NO_OUTPUT = "torchtop did not start this job: its output is where it was started"
"""What `o` says where no output was kept (`attach` says so in its own words)."""
NO_LOG = "saved traces keep no job output: a run folder recorded by `torchtop run` does"
TICKS_JOIN_S = 30.0
"""How long quitting waits for a tick in progress (a large profiler window being analysed)."""
TRIAL_CANCEL_S = 30.0
"""How long quitting waits for a trial in progress to stop its measured run."""

NO_AGENT_MODULES = (
    "modules: no step timed yet; only a job with torchtop's agent "
    "(run, demo, attach --inject) can time its modules"
)


class Dashboard(App[Report | None]):
    """Live with a `source` (and a `pacer`), offline with a ready `frame`."""

    TITLE = "torchtop"
    ENABLE_COMMAND_PALETTE = False
    CSS = CSS
    # Textual annotates these as instance variables, so they cannot be ClassVar here.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]  # noqa: RUF012
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "output", "Output"),
        # Where torchtop kept no output (attach, saved traces) `o` is not offered, but says why.
        Binding("o", "why_no_output", "Output", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("p", "pause", "Pause"),
    ]

    def __init__(
        self,
        source: SnapshotSource | None = None,
        *,
        frame: Frame | None = None,
        pacer: Pacer | None = None,
        applier: Applier | None = None,
        clock: bool = False,
        why_no_apply: str | None = None,
        stay: bool = False,
        output_dir: Path | None = None,
        why_no_output: str | None = None,
    ) -> None:
        """`clock`: the footer shows how long the dashboard has run and that `q` ends it.
        `why_no_apply`: without an applier, what `a` says (the default names the mode).
        `stay`: when the run ends, show the final report and how the job ended until `q`.
        `output_dir`: the run folder whose job's output `o` shows (`runs.output_tail.job_output`);
        where it keeps none, `o` says `why_no_output`."""
        super().__init__()
        if (source is None) == (frame is None):
            raise ValueError("a Dashboard shows either a live source or an offline frame")
        self.source = source
        self.pacer: Pacer = pacer or IntervalPacer()
        self.applier = applier
        self.builder = FrameBuilder()
        self.latest = frame
        self.live = source is not None
        self.recorded = self.live or bool(frame and frame.recorded)
        self.paused = False
        self.frames_received = 0
        self.frames_shown = 0
        self.finishing = False
        self.ticks_stopped = threading.Event()
        if source is None:
            self.ticks_stopped.set()
        self.trial_idle = threading.Event()
        self.trial_idle.set()
        self.trial_outcomes: list[TrialOutcome] = []
        self.clock = clock
        self.started_s = time.monotonic()
        self.why_no_apply = why_no_apply
        self.stay = stay
        self.ended = False
        """The run has ended and the dashboard stays (`stay`): nothing more to apply."""
        self.final: Report | None = None
        self._final_lock = asyncio.Lock()
        self.output_dir = output_dir
        self.why_no_output = why_no_output or NO_OUTPUT
        self.opened: str | None = None
        """The section the user unfolded (`f`): the last to give way."""
        self.folded: list[str] = []

    def compose(self) -> ComposeResult:
        yield JobHeader(id="header")
        with Horizontal(id="top"):
            yield VerdictPanel(id="verdict", classes="panel")
            yield StepTimePanel(id="steptime", classes="panel")
        yield FoldedLine(id="top-folded")
        with Horizontal(id="middle"):
            yield FixList(id="fixes", classes="panel")
            if self.recorded:
                yield DevicesPanel(classes="panel")
            else:
                yield TopsPanel(beside_ranks=False, classes="panel")
        yield RunTimelinePanel(id="timeline", classes="panel")
        yield FoldedLine(id="timeline-folded")
        with Horizontal(id="bottom"):
            if self.recorded:
                yield StacksPanel(id="stacks", classes="panel")
            yield RanksPanel(id="ranks", classes="panel")
            yield NodesPanel(id="nodes", classes="panel")  # a shared run's nodes, else hidden
            if self.recorded:
                yield TopsPanel(beside_ranks=True, classes="panel")
            yield EfficiencyPanel(id="efficiency", classes="panel")  # hidden without shapes
            yield MemoryPanel(id="memory", classes="panel")  # hidden without a memory section
            yield ModulesPanel(id="modules", classes="panel")  # hidden without module calls
        yield FoldedLine(id="bottom-folded")
        yield TrialPanel(id="trial")
        yield FoldedLine(id="trial-folded")
        yield JobEndPanel(id="jobend")
        yield FoldedLine(id="jobend-folded")
        yield FilterBar()
        yield ClockFooter(self.started_s) if self.clock else KeysFooter()

    def get_default_screen(self) -> Screen[Any]:
        return DashboardScreen(id="_default")

    def on_mount(self) -> None:
        self.query_one("#fix-options", OptionList).focus()
        if self.applier is not None:
            self.query_one(FixList).border_subtitle = "Enter: details · a: apply"
        if self.latest is not None:
            self.show(self.latest)
        if self.source is not None:
            self.tick_loop()
            self.finish_on_sigterm(True)

    def finish_on_sigterm(self, on: bool) -> None:
        """Over a live run a SIGTERM to torchtop (`timeout`, `kill`) ends the dashboard as `q`
        does: the job it launched is stopped, its report written, the terminal given back.
        Only the main thread's loop can take a signal: elsewhere (a test's) nothing changes."""
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        if on:
            loop.add_signal_handler(signal.SIGTERM, self.finish)
        else:
            loop.remove_signal_handler(signal.SIGTERM)

    @work(thread=True, exclusive=True, group="ticks", name="ticks")
    def tick_loop(self) -> None:
        assert self.source is not None
        try:
            while self.pacer.wait():
                frame = self.builder.build(self.source.tick())
                if self.applier is not None and frame.fixes:
                    frame = replace(frame, proposals=self.plan_fixes(frame))
                self.post_message(FrameMessage(frame))
                self.track_relaunch()
                if frame.finished:
                    break
        finally:
            self.ticks_stopped.set()

    def plan_fixes(self, frame: Frame) -> dict[tuple[str, str], Proposal]:
        """Every listed fix planned as `a` would plan it now (in the tick thread), so that the
        list shows the value a fix would really set: the rule's value resolved for this job
        and machine, or that it cannot be applied (say, the job already runs with it)."""
        assert self.applier is not None
        planned: dict[tuple[str, str], Proposal] = {}
        for ranked in frame.fixes:
            try:
                planned[ranked.key] = self.applier.propose(ranked.fix, frame.report)
            except Exception:  # the tick thread must go on: such a fix is listed as its rule says
                continue
        return planned

    @property
    def reverter(self) -> Reverter | None:
        return self.applier if isinstance(self.applier, Reverter) else None

    def track_relaunch(self) -> None:
        """In the tick thread: the job with a kept fix, judged against its trial."""
        reverter = self.reverter
        if reverter is None:
            return
        try:
            holding = reverter.since_relaunch()
        except Exception:  # the tick thread must go on: the panel keeps its last figures
            return
        if holding is not None:
            self.post_message(HoldingUpdate(holding))

    def on_holding_update(self, message: HoldingUpdate) -> None:
        panel = self.query_one(TrialPanel)
        if panel.view is not None:
            panel.view = panel.view.tracked(message.holding)

    def action_revert(self) -> None:
        reverter = self.reverter
        trial = reverter.revertible if reverter is not None else None
        if trial is None or not self.can_apply:
            return
        view = self.query_one(TrialPanel).view
        holding = view.holding if view is not None else None
        self.push_screen(RevertScreen(trial, holding), callback=self.start_revert)

    def start_revert(self, confirmed: bool | None) -> None:
        if not confirmed or not self.can_apply:
            return
        self.trial_idle.clear()
        self.refresh_bindings()
        self.job_stopped("the revert", time.monotonic())
        self.run_revert()

    @work(thread=True, exclusive=True, group="trial", name="revert")
    def run_revert(self) -> None:
        """Stop the job and start it without the kept fix; the outcome comes back as a message."""
        reverter = self.reverter
        assert reverter is not None

        def say(event: TrialEvent) -> None:
            self.post_message(TrialUpdate(event))

        try:
            done = RevertDone(reverter.revert(say))
        except Exception as exc:  # the dashboard must outlive a failed revert, and say why
            done = RevertDone(None, f"{exc}")
        finally:
            self.trial_idle.set()
        self.post_message(done)

    def on_revert_done(self, message: RevertDone) -> None:
        self.job_stopped(None)
        panel = self.query_one(TrialPanel)
        if panel.view is not None:
            panel.view = panel.view.reverted(message.outcome, message.error)
        self.refresh_bindings()
        self.arrange_bottom()

    def on_unmount(self) -> None:
        # However the app ends, the tick thread must not wait for a tick that never comes.
        self.pacer.stop()
        if self.source is not None:
            self.finish_on_sigterm(False)

    def on_frame_message(self, message: FrameMessage) -> None:
        self.frames_received += 1
        self.latest = message.frame
        if not self.paused:
            self.show(message.frame)
        if message.frame.finished and self.stay:
            self.conclude()
        elif message.frame.finished:
            self.finish()

    def show(self, frame: Frame) -> None:
        """Hand the frame down to every panel; each redraws itself from it."""
        self.frames_shown += 1
        for panel in self.query(Panel):
            panel.frame = frame
        self.query_one(FixList).frame = frame
        for tops in self.query(TopsPanel):
            tops.frame = frame
        self.arrange_bottom()

    def arrange_bottom(self) -> None:
        """Every section sized to the terminal, the least needed folded to a line where they
        cannot all fit (`tui.arrange`). On a short terminal a trial that is over keeps only
        its outcome."""
        screen = self.query_one("#bottom").screen
        trial = self.query_one(TrialPanel)
        short = not screen.has_class("-tall")
        over = trial.view is not None and trial.view.outcome is not None and not self.trial_running
        trial.brief = short and over
        bars = 1 if self.query_one(FilterBar).display else 0
        folded = arrange(screen, self.opened, bars)
        if bool(folded) != bool(self.folded):
            self.folded = folded
            self.refresh_bindings()
        self.folded = folded

    def on_reshaped(self) -> None:
        self.arrange_bottom()

    def action_unfold(self) -> None:
        """`f`: the next folded section is shown; another gives way for it if one must."""
        if self.folded:
            self.opened = self.folded[0]
            self.arrange_bottom()

    def on_resize(self) -> None:
        self.call_after_refresh(self.arrange_bottom)  # the -tall breakpoint may have moved

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Nothing to pause offline, nothing to apply without an applier: such keys are neither
        # active nor shown. During a trial, `a` is shown dimmed: one trial at a time.
        if action == "pause":
            return self.live
        if action == "unfold":
            return bool(self.folded)
        if action == "apply":
            return None if self.applier is not None and self.trial_running else self.can_apply
        if action == "why_no_apply":
            return self.applier is None
        if action == "time_modules":
            return self.modules_requester is not None and not self.finishing and not self.ended
        if action in ("output", "why_no_output"):
            return (self.output_dir is not None) == (action == "output")
        if action == "revert":
            reverter = self.reverter
            if reverter is None or reverter.revertible is None:
                return False
            return True if self.can_apply else None
        return True

    @property
    def modules_requester(self) -> ModulesRequester | None:
        source = self.source
        return source if isinstance(source, ModulesRequester) else None

    def action_time_modules(self) -> None:
        """`m`: the agents time every module's forward for a few steps (the Modules panel)."""
        requester = self.modules_requester
        if requester is None:
            return
        if self.latest is None or self.latest.step is None:
            self.notify(NO_AGENT_MODULES, timeout=6)
            return
        try:
            said = requester.request_modules()
        except OSError as exc:
            said = f"modules: the request could not be written ({exc})"
        self.notify(said, timeout=4)

    @property
    def can_apply(self) -> bool:
        live = not self.finishing and not self.ended
        return self.applier is not None and not self.trial_running and live

    @property
    def trial_running(self) -> bool:
        return not self.trial_idle.is_set()

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.query_one(JobHeader).paused = self.paused
        if not self.paused and self.latest is not None:
            self.show(self.latest)

    def action_why_no_apply(self) -> None:
        self.notify(self.no_apply_reason(), title="Nothing to apply here", timeout=8)

    def no_apply_reason(self) -> str:
        if self.why_no_apply is not None:
            return self.why_no_apply
        command = self.latest.command if self.latest is not None else ()
        return why_not_applied(self.live, command)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_output(self) -> None:
        """The job's own output, followed; or, where torchtop kept none, why, in one line."""
        folder = self.output_dir
        if folder is None or job_output(folder) is None:
            self.action_why_no_output()
            return
        self.push_screen(OutputScreen(lambda: job_output(folder)))

    def action_why_no_output(self) -> None:
        self.notify(self.why_no_output, title="No job output here", timeout=8)

    def on_fix_chosen(self, message: FixChosen) -> None:
        frame = self.latest
        if frame is None:
            return
        fix = message.ranked.fix
        screen = FixDetailsScreen(
            message.ranked,
            frame.command,
            frame.cli_options,
            self.can_apply,
            frame.proposals.get(message.ranked.key),
            why_not=None if self.applier is not None else self.no_apply_reason(),
        )
        self.push_screen(screen, callback=lambda result: self.apply(fix, result))

    def apply(self, fix: Fix, result: str | None) -> None:
        """The details screen closed: with "apply", go on as `a` on the list does."""
        if result == "apply":
            self.propose(fix)

    def action_apply(self) -> None:
        fixes = self.query_one(FixList)
        index = self.query_one("#fix-options", OptionList).highlighted
        if index is not None and 0 <= index < len(fixes.fixes):
            self.propose(fixes.fixes[index].fix)

    def propose(self, fix: Fix) -> None:
        if self.can_apply and self.latest is not None:
            self.plan_proposal(fix, self.latest.report)

    @work(thread=True, exclusive=True, group="propose", name="propose")
    def plan_proposal(self, fix: Fix, report: Report) -> None:
        """Plan off the UI thread: it reads the run state, which a tick may be updating."""
        assert self.applier is not None
        self.post_message(ProposalReady(self.applier.propose(fix, report)))

    def on_proposal_ready(self, message: ProposalReady) -> None:
        proposal = message.proposal
        if not self.can_apply:
            return
        self.push_screen(ApplyScreen(proposal), callback=lambda ok: self.start_trial(proposal, ok))

    def start_trial(self, proposal: Proposal, confirmed: bool | None) -> None:
        if not confirmed or not self.can_apply or proposal.after is None:
            return
        self.trial_idle.clear()
        self.refresh_bindings()
        change = "; ".join(proposal.after.changes) or proposal.after.description
        now_s = time.monotonic()
        self.query_one(TrialPanel).view = TrialView(change, clock=TrialClock.start(now_s))
        self.job_stopped("the trial", now_s)
        self.arrange_bottom()
        self.run_trial(proposal)

    @work(thread=True, exclusive=True, group="trial", name="trial")
    def run_trial(self, proposal: Proposal) -> None:
        """The whole trial (tens of seconds); progress and the outcome come back as messages."""
        assert self.applier is not None

        def report(event: TrialEvent) -> None:
            self.post_message(TrialUpdate(event))

        try:
            outcome = self.applier.try_fix(proposal, report)
        except Exception as exc:  # the dashboard must outlive a failed trial, and say why
            outcome = TrialOutcome(None, None, None, error=f"the trial failed: {exc}")
        finally:
            self.trial_idle.set()
        self.post_message(TrialDone(outcome))

    def job_stopped(self, why: str | None, since_s: float | None = None) -> None:
        """The header says the job is stopped for `why` (a trial, a revert); None: it runs."""
        header = self.query_one(JobHeader)
        header.stopped_for = why or ""
        header.stopped_since_s = since_s if why is not None else None

    def on_trial_update(self, message: TrialUpdate) -> None:
        panel = self.query_one(TrialPanel)
        if panel.view is not None:
            panel.view = panel.view.updated(message.event, time.monotonic())

    def on_trial_done(self, message: TrialDone) -> None:
        self.job_stopped(None)
        self.trial_outcomes.append(message.outcome)
        panel = self.query_one(TrialPanel)
        if panel.view is not None:
            panel.view = panel.view.finished(message.outcome)
        self.refresh_bindings()
        self.arrange_bottom()

    async def action_quit(self) -> None:
        self.finish()

    def finish(self) -> None:
        if not self.finishing:
            self.finishing = True
            self.query_one(JobHeader).finishing = self.live
            self.finish_and_exit()

    @work(exclusive=True, group="finish")
    async def finish_and_exit(self) -> None:
        """Stop ticking, wait for a tick in progress, then end with the source's final report."""
        self.pacer.stop()
        if self.source is None:
            self.exit(None)
            return
        if self.applier is not None and self.trial_running:
            await asyncio.to_thread(self.applier.cancel, TRIAL_CANCEL_S)
        self.exit(await self.final_report())

    def conclude(self) -> None:
        """The run ended by itself: show its final report and how the job ended, until `q`."""
        if not self.ended and not self.finishing:
            self.ended = True
            self.refresh_bindings()
            self.show_final()

    @work(exclusive=True, group="conclude")
    async def show_final(self) -> None:
        report = await self.final_report()
        if self.latest is not None:
            # The fixes of the verdict now shown, not of the last live one (hysteresis may not
            # have shown any verdict yet): the list and the verdict beside it agree.
            verdict, fixes = report.verdict, rank_fixes(report.verdict)
            frame = replace(self.latest, report=report, verdict=verdict, fixes=fixes, finished=True)
            self.latest = frame
            self.show(frame)
        self.query_one(JobEndPanel).ending = report.exit

    async def final_report(self) -> Report:
        """The source's final report, asked for once (stopping ticks first) and kept."""
        assert self.source is not None
        async with self._final_lock:
            if self.final is None:
                self.pacer.stop()
                await asyncio.to_thread(self.ticks_stopped.wait, TICKS_JOIN_S)
                self.final = await asyncio.to_thread(self.source.finish)
            return self.final


def run_live(
    monitor: SnapshotSource,
    interval_s: float = 1.0,
    applier: Applier | None = None,
    clock: bool = False,
    why_no_apply: str | None = None,
    stay: bool = False,
    output_dir: Path | None = None,
    why_no_output: str | None = None,
) -> Report:
    """The dashboard over a live run until the user quits, or the run ends (unless `stay`:
    then it shows the final report and how the job ended until `q`); the final report.

    With an `applier`, `a` tries the highlighted fix on the job (confirmed in a modal first);
    without one, the key is not offered, and pressed it says why (`why_no_apply`). `o` shows
    the output of the job `output_dir` runs, or says `why_no_output`."""
    pacer = IntervalPacer(interval_s)
    app = Dashboard(
        monitor,
        pacer=pacer,
        applier=applier,
        clock=clock,
        why_no_apply=why_no_apply,
        stay=stay,
        output_dir=output_dir,
        why_no_output=why_no_output,
    )
    result = app.run()
    if isinstance(result, Report):
        return result
    # The app ended another way (an error): end a trial and ticking before the last read.
    pacer.stop()
    if applier is not None:
        applier.cancel(TRIAL_CANCEL_S)
    app.ticks_stopped.wait(TICKS_JOIN_S)
    return app.final if app.final is not None else monitor.finish()


def run_view(report: Report, state: RunState | None = None, aside: str | None = None) -> None:
    """The dashboard over saved traces, or a recorded run folder (`state` adds its samples);
    `aside` is added to the title (`job 1 of 5`, when the traces were not one job); `o`
    shows a recorded run's job output."""
    folder = state.layout.root if state is not None else None
    Dashboard(frame=view_frame(report, state, aside), output_dir=folder, why_no_output=NO_LOG).run()


def view_frame(report: Report, state: RunState | None = None, aside: str | None = None) -> Frame:
    """`offline_frame`, with `aside` added to the title."""
    frame = offline_frame(report, state)
    return frame if aside is None else replace(frame, job=f"{frame.job} · {aside}")
