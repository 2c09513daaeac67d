"""Stragglers by recurrence and silent ranks, judged on planted series (`assess.ranks`)."""

from __future__ import annotations

import io
import json
import tomllib
from pathlib import Path

import msgspec
import pytest

from tests.conftest import CONTEXT, RULES_DIR
from tests.diagnosis.test_strict_loading import edit, shipped_copy
from tests.fake_run import FakeRun
from torchtop.assess.ranks import ended, standings, stragglers
from torchtop.assess.run import assess
from torchtop.diagnosis.rules import RuleError, load_rules
from torchtop.diagnosis.schema import RankPolicy
from torchtop.live.headless import ProgressPrinter, progress_line
from torchtop.report.contract import report_to_json
from torchtop.report.markdown import render_markdown
from torchtop.report.text import render_text
from torchtop.runs.records import Bye, HostProcess, HostSample, Step
from torchtop.runs.state import ProcessState, StepRecord, load_run
from torchtop.tui.widgets.ranks import rank_line

POLICY = RankPolicy()
T0 = 1_700_000_000.0


def _series(waits_ms: list[list[float]], wall_s: float = 0.1) -> dict[int, list[StepRecord]]:
    """One key per rank; step n of rank r waited `waits_ms[n][r]` inside backward()."""
    ranks = len(waits_ms[0])
    return {
        r: [
            StepRecord(r, n, T0 + n * wall_s, wall_s, None, None, None, row[r] / 1000)
            for n, row in enumerate(waits_ms)
        ]
        for r in range(ranks)
    }


def test_one_outlier_step_does_not_make_a_straggler() -> None:
    # Ranks take turns being waited on; in one step rank 2 is 80 ms late.
    waits = [[40.0, 50.0, 45.0] if n % 2 else [50.0, 40.0, 45.0] for n in range(50)]
    waits[30] = [80.0, 80.0, 0.0]
    found = stragglers(_series(waits), POLICY)
    assert not any(s.straggler for s in found.values())
    assert found[2].culprit_share == 0.02


def test_a_rank_waited_on_in_70_percent_of_steps_is_the_straggler_with_its_excess_busy_time() -> (
    None
):
    # Rank 1 is 50 ms late in 35 of 50 steps: the others wait 50 ms in backward, it waits 0.
    waits = [[50.0, 0.0, 50.0] if n % 10 < 7 else [0.0, 0.0, 0.0] for n in range(50)]
    found = stragglers(_series(waits), POLICY)
    assert found[1].straggler
    assert found[1].culprit_share == 0.7
    # Busy time (wall - wait): 100 ms for rank 1, the peers' median 50 ms.
    assert found[1].slower_by == 1.0
    assert found[1].since_step == 0
    assert not found[0].straggler and not found[2].straggler


def test_since_is_the_first_step_of_the_culprits_current_run() -> None:
    # Rank 0 is waited on from step 20 on; before that, nobody in particular.
    taking_turns = [[20.0, 25.0] if n % 2 else [25.0, 20.0] for n in range(20)]
    waits = taking_turns + [[0.0, 30.0] for _ in range(40)]
    waits[45] = [30.0, 0.0]  # one step off inside the run does not restart it
    series = _series(waits)
    found = stragglers(series, POLICY)
    assert found[0].straggler
    assert found[0].since_step == 20
    assert found[0].since_t == series[0][20].t


def test_ranks_that_do_not_synchronise_are_compared_by_their_step_walls() -> None:
    series = {
        r: [StepRecord(r, n, T0 + n, 0.15 if r == 2 else 0.1, None, None, None) for n in range(30)]
        for r in range(3)
    }
    found = stragglers(series, POLICY)
    assert [k for k, s in found.items() if s.straggler] == [2]
    assert found[2].slower_by == 0.5


def test_too_few_shared_steps_name_no_straggler() -> None:
    waits = [[50.0, 0.0] for _ in range(POLICY.min_steps - 1)]
    assert stragglers(_series(waits), POLICY) == {}


def _process(pid: int, last_t: float, bye: Bye | None = None) -> ProcessState:
    process = ProcessState(pid, bye=bye, last_t=last_t)
    process.ended = bye is not None
    return process


def test_a_rank_that_said_bye_ended_with_its_exit_status_or_signal() -> None:
    assert ended(_process(1, T0, Bye(t=T0, exit_code=0)), T0, (), POLICY) == "exit 0"
    assert ended(_process(1, T0, Bye(t=T0, exit_code=3)), T0, (), POLICY) == "exit 3"
    killed = Bye(t=T0, exit_code=130, signal="SIGINT")
    assert ended(_process(1, T0, killed), T0, (), POLICY) == "signal SIGINT"


def test_a_rank_unheard_while_its_peers_go_on_is_silent_since_its_last_record() -> None:
    quiet = _process(1, T0)
    assert ended(quiet, T0 + POLICY.silent_after_s - 1, (), POLICY) is None
    late = ended(quiet, T0 + POLICY.silent_after_s + 1, (), POLICY)
    assert late == "silent since 2023-11-14T22:13:20+00:00"
    assert ended(quiet, T0, (), POLICY, run_ended=True) == late


def test_a_rank_whose_process_left_the_host_samples_is_silent_at_once() -> None:
    seen = HostSample(t=T0 - 1, processes=[HostProcess(pid=1), HostProcess(pid=2)])
    gone = HostSample(t=T0 + 1, processes=[HostProcess(pid=2)])
    assert ended(_process(1, T0), T0 + 1, [seen, gone], POLICY) is not None
    assert ended(_process(2, T0), T0 + 1, [seen, gone], POLICY) is None
    # A process no sample ever listed is not called gone.
    assert ended(_process(3, T0), T0 + 1, [seen, gone], POLICY) is None


def test_standings_are_only_given_for_a_job_of_several_ranks() -> None:
    assert standings([_process(1, T0)], POLICY) == []


def _two_rank_run(tmp_path: Path) -> FakeRun:
    run = FakeRun(tmp_path / "run")
    for pid, rank in ((101, 0), (102, 1)):
        run.hello(pid, rank=rank)
    for n in range(30):
        run.t += 0.1
        run.agent(101).write(Step(step=n, wall_s=0.1, t=run.t, backward_s=0.06))
        run.agent(102).write(Step(step=n, wall_s=0.1, t=run.t, backward_s=0.01))
    run.agent(101).write(Bye(t=run.t, reason="exit", exit_code=0))
    return run


def test_a_recorded_two_rank_run_reports_the_straggler_and_how_each_rank_ended(
    tmp_path: Path,
) -> None:
    run = _two_rank_run(tmp_path)
    document = report_to_json(assess(load_run(run.layout.root), {}, load_rules(), context=CONTEXT))
    by_rank = {r["rank"]: r for r in document["ranks"]}
    assert by_rank[1]["straggler"] and not by_rank[0]["straggler"]
    # Busy 90 ms against 40 ms.
    assert by_rank[1]["slower_by"] == 1.25
    assert by_rank[1]["since"]["step"] == 0
    assert by_rank[0]["ended"] == "exit 0"
    # Rank 1 wrote no bye and its peer has stopped too: it still runs as far as anyone knows.
    assert by_rank[1]["ended"] is None
    json.dumps(document)


def test_the_text_report_and_the_progress_line_name_the_straggler_and_each_ending(
    tmp_path: Path,
) -> None:
    report = assess(
        load_run(_two_rank_run(tmp_path).layout.root), {}, load_rules(), context=CONTEXT
    )
    text = render_text(report)
    assert "straggler: +125% busy time vs its peers, waited on in 100% of steps" in text
    assert "ended: exit 0" in text
    assert "slowest" not in text  # the ranks share one step time: the straggler is marked
    markdown = render_markdown(report)
    assert "- rank 1: straggler: +125% busy time" in markdown
    assert "- rank 0: ended: exit 0" in markdown
    line = progress_line(report, report.verdict, 3.0)
    assert "rank 1 straggler +125%" in line and "rank 0 exit 0" in line


def test_a_single_rank_report_has_no_rank_standing(tmp_path: Path) -> None:
    run = FakeRun(tmp_path / "run")
    run.hello(101)
    run.steps(101, 20, wall_s=0.1, data_wait_s=0.0)
    document = report_to_json(assess(load_run(run.layout.root), {}, load_rules(), context=CONTEXT))
    assert "ranks" not in document


def test_the_rank_policy_is_read_from_the_verdict_file_and_a_misspelt_key_is_named(
    tmp_path: Path,
) -> None:
    stated = tomllib.loads((RULES_DIR / "_verdict.toml").read_text())["ranks"]
    assert set(stated) == {f.name for f in msgspec.structs.fields(RankPolicy)}
    folder = shipped_copy(tmp_path)
    edit(folder, "_verdict.toml", "culprit_share = 0.6", "culprit_share = 0.9")
    assert load_rules(folder).settings.ranks.culprit_share == 0.9
    edit(folder, "_verdict.toml", "silent_after_s =", "silent_after =")
    with pytest.raises(RuleError, match=r"_verdict.toml: unknown key 'ranks.silent_after'"):
        load_rules(folder)


def test_the_dashboard_rank_line_marks_the_straggler_and_says_how_a_rank_ended(
    tmp_path: Path,
) -> None:
    report = assess(
        load_run(_two_rank_run(tmp_path).layout.root), {}, load_rules(), context=CONTEXT
    )
    lines = {r.analysis.rank: rank_line(r, None, 60).plain for r in report.ranks}
    assert lines[1].endswith("straggler +125%")
    assert lines[0].endswith("exit 0") and "straggler" not in lines[0]


def test_a_rank_that_fell_silent_does_not_hide_the_straggler_among_the_running_ranks() -> None:
    # Rank 1 is waited on in every step; rank 2 stopped after 20 steps while the others went on
    # for 300 (more than the newest windows looked at), so it shares no new step with them.
    waits = [[50.0, 0.0, 50.0] for _ in range(300)]
    series = _series(waits)
    series[2] = series[2][:20]
    processes = []
    for rank, steps in series.items():
        process = ProcessState(1000 + rank, last_t=steps[-1].t)
        process.steps.extend(steps)
        processes.append(process)
    found = standings(processes, POLICY)
    assert found[1].straggler and not found[0].straggler
    assert found[2].ended is not None and found[2].ended.startswith("silent since")


def test_the_progress_printer_names_a_rank_that_ended_at_once_not_at_the_next_quiet_line(
    tmp_path: Path,
) -> None:
    report = assess(
        load_run(_two_rank_run(tmp_path).layout.root), {}, load_rules(), context=CONTEXT
    )
    stream = io.StringIO()
    printer = ProgressPrinter(stream)
    standing = report.ranks[0].standing
    assert standing is not None
    running = msgspec.structs.replace(
        report,
        ranks=[
            msgspec.structs.replace(
                report.ranks[0], standing=msgspec.structs.replace(standing, ended=None)
            ),
            *report.ranks[1:],
        ],
    )
    printer(running, report.verdict, 1.0)
    printer(running, report.verdict, 2.0)  # nothing new within the quiet interval: no line
    printer(report, report.verdict, 3.0)  # rank 0 ended: a line at once
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "rank 0 exit 0" not in lines[0] and "rank 0 exit 0" in lines[1]
