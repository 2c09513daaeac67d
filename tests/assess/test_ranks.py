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
from torchtop.assess.ranks import ended, standings
from torchtop.assess.run import assess
from torchtop.assess.stragglers import binomial_tail, block_stragglers
from torchtop.diagnosis.rules import RuleError, load_rules
from torchtop.diagnosis.schema import RankPolicy
from torchtop.live.headless import ProgressPrinter, progress_line
from torchtop.model.report import RankStanding
from torchtop.report.contract import report_to_json
from torchtop.report.markdown import render_markdown
from torchtop.report.text import render_text
from torchtop.runs.records import Bye, HostProcess, HostSample, Step
from torchtop.runs.state import ProcessState, load_run
from torchtop.runs.step_blocks import FIRST_STEP
from torchtop.tui.widgets.ranks import rank_line

POLICY = RankPolicy()
T0 = 1_700_000_000.0


def _ranks(waits_ms: list[list[float]], wall_s: float = 0.1) -> list[ProcessState]:
    """One process per rank; its step n waited `waits_ms[n][r]` inside backward() (numbered
    from the first counted step, so every planted step is judged)."""
    processes = [ProcessState(100 + r) for r in range(len(waits_ms[0]))]
    for n, row in enumerate(waits_ms):
        number = FIRST_STEP + n
        for process, wait_ms in zip(processes, row, strict=True):
            process.blocks.add(number, wall_s, wall_s - wait_ms / 1000, T0 + number * wall_s)
    return processes


def stragglers(waits_ms: list[list[float]], wall_s: float = 0.1) -> dict[int, RankStanding]:
    processes = _ranks(waits_ms, wall_s)
    return block_stragglers(processes, range(len(processes)), POLICY)


def test_outlier_steps_and_ranks_taking_turns_make_no_straggler() -> None:
    # Ranks take turns being waited on; in a few steps rank 2 is 80 ms late.
    waits = [[40.0, 50.0, 45.0] if n % 2 else [50.0, 40.0, 45.0] for n in range(200)]
    for n in (30, 31, 95, 150):
        waits[n] = [80.0, 80.0, 0.0]
    found = stragglers(waits)
    assert not any(s.straggler for s in found.values())
    assert found[0].blocks_judged == 20 and found[0].judged_steps == (2, 201)


def test_a_rank_the_others_wait_on_in_most_blocks_is_the_straggler_with_its_margin() -> None:
    # Rank 1 is 30 ms late in 8 of every 10 steps: the others wait 30 ms in backward, it not.
    waits = [[30.0, 0.0, 30.0] if n % 10 < 8 else [0.0, 0.0, 0.0] for n in range(100)]
    found = stragglers(waits)
    assert [k for k, s in found.items() if s.straggler] == [1]
    assert found[1].culprit_share == 1.0 and found[1].chance is not None
    # Per block, the medians: its busy time 100 ms, the peers' 70 ms (most steps); they wait
    # 30 ms of its 100 ms step.
    assert found[1].slower_by == pytest.approx(100 / 70 - 1, abs=1e-4)
    assert found[1].waited_share == pytest.approx(0.3, abs=1e-4)
    assert found[1].since_step == FIRST_STEP


def test_ranks_alike_but_one_a_little_busier_in_a_mostly_waiting_step_are_no_straggler() -> None:
    # Rank 1 is 15% busier in every block (2.3 ms against 2 ms of a 10 ms step): persistent,
    # but its peers lose 3% of their step on it.
    waits = [[8.0, 7.7] for _ in range(300)]
    found = stragglers(waits, wall_s=0.01)
    assert found[1].culprit_share == 1.0 and found[1].slower_by == pytest.approx(0.15)
    assert not found[1].straggler
    assert found[1].waited_share == pytest.approx(0.03)


def test_a_short_streak_of_blocks_by_chance_is_no_straggler() -> None:
    # Two ranks alike but for rank 0 slower in the newest 60 steps (6 blocks): 1 in 64 by chance.
    waits = [[20.0, 25.0] if (n // 10) % 2 else [25.0, 20.0] for n in range(200)]
    waits += [[0.0, 40.0] for _ in range(60)]
    assert not stragglers(waits)[0].straggler


def test_since_is_the_first_step_of_the_straggler_s_current_stretch() -> None:
    # Rank 0 is waited on from the 200th counted step on; before that, rank 1 was.
    waits = [[25.0, 20.0] for _ in range(200)] + [[0.0, 40.0] for _ in range(250)]
    waits[245] = [40.0, 0.0]  # one step off inside the stretch does not restart it
    found = stragglers(waits)
    assert found[0].straggler and not found[1].straggler
    assert found[0].since_step == FIRST_STEP + 200
    assert found[0].since_t == T0 + found[0].since_step * 0.1
    assert found[0].judged_steps == (FIRST_STEP, FIRST_STEP + 449)


def test_ranks_that_do_not_synchronise_are_compared_by_their_step_walls() -> None:
    processes = [ProcessState(100 + r) for r in range(3)]
    for n in range(FIRST_STEP, FIRST_STEP + 100):
        for r, process in enumerate(processes):
            wall_s = 0.15 if r == 2 else 0.1 + 0.001 * ((n + r) % 3)
            process.blocks.add(n, wall_s, wall_s, T0 + n)
    found = block_stragglers(processes, range(3), POLICY)
    assert [k for k, s in found.items() if s.straggler] == [2]
    assert found[2].slower_by == pytest.approx(0.5, abs=0.02)


def test_too_few_shared_steps_name_no_straggler() -> None:
    waits = [[50.0, 0.0] for _ in range(POLICY.min_steps - 1)]
    assert stragglers(waits) == {}


def test_the_chance_of_a_streak_is_the_binomial_tail() -> None:
    assert binomial_tail(10, 10, 0.5) == pytest.approx(0.5**10)
    assert binomial_tail(2, 3, 0.5) == pytest.approx(0.5)
    assert binomial_tail(0, 3, 0.5) == 1.0
    assert 0 < binomial_tail(3000, 3000, 0.5) < 1e-300 or binomial_tail(3000, 3000, 0.5) == 0.0


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
    for n in range(110):
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
    # Busy 90 ms against 40 ms, over every counted step (the warm-up's 0 and 1 left out).
    assert by_rank[1]["slower_by"] == 1.25
    assert by_rank[1]["waited_share"] == 0.5
    assert by_rank[1]["since"]["step"] == 2 and by_rank[1]["judged_steps"] == [2, 109]
    # Labels inside the counted steps: the 108 counted are numbered 2-109.
    assert document["steps"]["count"] == 109 - 2 + 1
    assert by_rank[1]["blocks"] == 11 and by_rank[0]["culprit_share"] == 0.0
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
    assert (
        "straggler: +125% busy time vs its peers, who wait 50% of each step on it;"
        " the slowest in 11 of 11 blocks of 10 steps (steps 2-109)\n"
    ) in text
    assert "ended: exit 0" in text
    assert "← slowest" not in text  # the ranks share one step time: the straggler is marked
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
    # for 300, so it shares too few steps with them to be judged beside them.
    waits = [[50.0, 0.0, 50.0] for _ in range(300)]
    processes = _ranks(waits)
    stopped = _ranks(waits[:20])[2]
    processes[2] = stopped
    for process, last in zip(processes, (300, 300, 20), strict=True):
        process.last_t = T0 + last * 0.1
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
