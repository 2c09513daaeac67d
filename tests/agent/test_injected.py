"""The injected agent inside real training jobs: hooks in after the fact, all out on detach.

The jobs (`workloads/injectable.py`) run the very statement `attach --inject` delivers, at set
steps, and print their own step log, what they see of the agent in themselves, and their final
loss: the outside truth the agent's records are checked against.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import torchtop
from tests.agent.running import JOB_TIMEOUT_S, JOBS, run_job
from tests.tables import tables
from torchtop.agent.injected import ANNOUNCEMENT
from torchtop.runs.journal import JournalReader

pytest.importorskip("torch")

PACKAGE_DIR = Path(torchtop.__file__).resolve().parent
BOOT = PACKAGE_DIR / "agent" / "bootstrap" / "inject_boot.py"
PATCHED = [
    "Optimizer.__init__",
    "_BaseDataLoaderIter.__next__",
    "autocast.__enter__",
    "profile._prepare_trace",
    "sys.excepthook",
    "sys.exit",
    "torch.autograd.backward",
    "torch.compile",
]
INNER = (
    "import os\n"
    "if os.path.exists(REQUEST):\n"
    "    try:\n"
    "        exec(compile(open(BOOT).read(), BOOT, 'exec'),"
    " {'__name__': '__torchtop_inject__', 'REQUEST': REQUEST})\n"
    "    except BaseException:\n"
    "        pass\n"
)


def request(run_dir: Path, number: int, attacher_pid: int, **extra: object) -> Path:
    """What the outside writes: `RUN/inject/request-N.json` and the one statement (a file the
    job reads at its step)."""
    inject = run_dir / "inject"
    inject.mkdir(parents=True, exist_ok=True)
    path = inject / f"request-{number}.json"
    table = {
        "run_dir": str(run_dir),
        "attacher_pid": attacher_pid,
        "package_dir": str(PACKAGE_DIR),
        "number": number,
        "requested_at": 0.0,
        **extra,
    }
    path.write_text(json.dumps(table), encoding="utf-8")
    names = {"__name__": "__torchtop_inject__", "REQUEST": str(path), "BOOT": str(BOOT)}
    statement = f'__import__("builtins").exec({INNER!r}, {names!r})'
    statement_file = run_dir.parent / f"{run_dir.name}-statement-{number}.py"
    statement_file.write_text(statement, encoding="utf-8")
    return statement_file


class Job:
    def __init__(self, stdout: str, stderr: str, returncode: int) -> None:
        self.lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        self.stderr = stderr
        self.returncode = returncode

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["kind"] == kind]

    def state(self, step: int) -> dict[str, Any]:
        (found,) = [s for s in self.kind("state") if s["step"] == step]
        return found

    @property
    def loss(self) -> str:
        return str(self.kind("loss")[0]["value"])


def run_injectable(tmp_path: Path, plan: dict[int, list[str]], steps: int = 60) -> Job:
    plan_text = json.dumps({str(k): v for k, v in plan.items()})
    command = [sys.executable, str(JOBS / "injectable.py"), "--steps", str(steps)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCHTOP_")}
    result = subprocess.run(
        [*command, "--plan", plan_text],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return Job(result.stdout, result.stderr, result.returncode)


def records(run_dir: Path) -> list[dict[str, Any]]:
    (events,) = sorted((run_dir / "events").glob("agent-*.jsonl"))
    return tables(JournalReader(events).read_new(final=True))


def read_json(path: Path) -> dict[str, Any]:
    table: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return table


def matched_steps(
    job: Job, found: list[dict[str, Any]], injected_at: int
) -> list[tuple[float, float]]:
    """(job's wall, agent's wall) for the agent's steps after its first, which ends inside
    the job's step `injected_at` (the agent arrived mid-step). The steps at a window's open
    and save are left out: the agent times the next step from when it is done with the
    profiler, as under `run`, while the job's own clock runs on."""
    windows = [r for r in found if r["kind"] == "window"]
    edges = {w["first_step"] - 1 for w in windows} | {w["last_step"] for w in windows}
    by_step = {s["step"]: s for s in job.kind("step")}
    pairs = []
    for step in found:
        if step["kind"] != "step" or step["step"] == 0 or step["step"] in edges:
            continue
        own, before = by_step[injected_at + step["step"]], by_step[injected_at + step["step"] - 1]
        # Ended inside the job's own step: after its last one, before it read its clock.
        assert before["end_t"] < step["t"] <= own["end_t"] + 0.001, (step, own)
        pairs.append((own["wall_s"], step["wall_s"]))
    return pairs


@pytest.fixture(scope="module")
def bare_loss(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The job's final loss with no agent ever loaded (60 steps)."""
    return run_injectable(tmp_path_factory.mktemp("bare"), {}).loss


def test_an_injected_agent_times_the_steps_the_job_logs_and_leaves_nothing_after_detach(
    tmp_path: Path, bare_loss: str
) -> None:
    run_dir = tmp_path / "attach"
    statement = request(run_dir, 1, os.getpid())
    plan = {2: ["wait", "0"], 5: ["exec", str(statement)], 45: ["detach", str(run_dir)]}
    job = run_injectable(tmp_path, plan)

    assert job.loss == bare_loss  # bit-identical: the hooks only read clocks
    pid = records(run_dir)[0]["pid"]
    assert job.stderr.splitlines() == [ANNOUNCEMENT.format(pid=pid, attacher=os.getpid())]
    ack = read_json(run_dir / "inject" / "ack-1.json")
    assert (ack["ok"], ack["replaced"], ack["already_agent"], ack["error"]) == (
        True, False, False, None,
    )  # fmt: skip
    loaded, detached = job.state(5), job.state(45)
    assert loaded["changed"] == PATCHED and loaded["threads"] == ["torchtop-inject"]
    assert loaded["post_hooks"] == 1 and loaded["main_names"] == job.state(2)["main_names"]
    assert detached["changed"] == [] and detached["post_hooks_as_before"]
    assert detached["threads"] == [] and not detached["profiling"]
    done = read_json(run_dir / "inject" / f"detached-{pid}.json")
    assert done["hooks_removed"][0] == "exit status watch"
    assert done["hooks_removed"][-1] == "optimizer step hook" and len(done["hooks_removed"]) == 7

    found = records(run_dir)
    kinds = [r["kind"] for r in found]
    # The last record is detach's bye: nothing of ours was left in atexit to write another.
    assert kinds[-1] == "bye" and found[-1]["reason"] == "detached" and kinds.count("bye") == 1
    assert "window" in kinds
    steps = [r for r in found if r["kind"] == "step"]
    assert len(steps) == 40  # the job's steps 5..44, counted from the injection
    pairs = matched_steps(job, found, injected_at=5)
    assert len(pairs) >= 37
    job_s, agent_s = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    print(f"agent {agent_s:.4f} s, job {job_s:.4f} s over {len(pairs)} steps")
    assert abs(agent_s - job_s) <= 0.05 * job_s, (agent_s, job_s)


def test_ten_inject_detach_cycles_leave_the_final_loss_bit_identical(
    tmp_path: Path, bare_loss: str
) -> None:
    plan: dict[int, list[str]] = {}
    for cycle in range(10):
        run_dir = tmp_path / f"attach-{cycle}"
        plan[2 + 5 * cycle] = ["exec", str(request(run_dir, 1, os.getpid()))]
        plan[4 + 5 * cycle] = ["detach", str(run_dir)]
    job = run_injectable(tmp_path, plan)

    assert job.loss == bare_loss
    assert all(job.state(4 + 5 * c)["changed"] == [] for c in range(10))
    assert all(job.state(4 + 5 * c)["threads"] == [] for c in range(10))
    assert len(job.stderr.splitlines()) == 10


def test_an_injection_inside_the_optimizer_s_hook_loop_waits_for_a_safe_point_to_add_its_hook(
    tmp_path: Path, bare_loss: str
) -> None:
    run_dir = tmp_path / "attach"
    statement = request(run_dir, 1, os.getpid())
    plan = {5: ["exec-in-hook", str(statement)], 8: ["wait", "0"], 45: ["detach", str(run_dir)]}
    job = run_injectable(tmp_path, plan)

    assert job.loss == bare_loss  # and no "OrderedDict mutated during iteration"
    theirs = ["act.<locals>.first", "act.<locals>.<lambda>"]
    loaded = job.state(8)
    assert loaded["post_hooks"] == 3 and loaded["post_hook_names"][:2] == theirs
    assert job.state(45)["post_hook_names"] == theirs and job.state(45)["changed"] == []
    found = records(run_dir)
    signals = {r["step_signal"] for r in found if r["kind"] == "settings"}
    assert "optimizer" in signals and found[-1]["reason"] == "detached"


def test_a_second_injection_stops_the_first_so_each_step_is_counted_once(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    plan = {
        5: ["exec", str(request(first, 1, os.getpid()))],
        20: ["exec", str(request(second, 2, os.getpid()))],
        40: ["detach", str(second)],
    }
    job = run_injectable(tmp_path, plan, steps=50)

    assert read_json(first / "inject" / "ack-1.json")["replaced"] is False
    assert read_json(second / "inject" / "ack-2.json")["replaced"] is True
    replaced = job.state(20)
    assert replaced["post_hooks"] == 1 and replaced["threads"] == ["torchtop-inject"]
    assert replaced["changed"] == PATCHED
    assert job.state(40)["changed"] == [] and job.state(40)["post_hooks_as_before"]
    old, new = records(first), records(second)
    assert old[-1]["kind"] == "bye" and old[-1]["reason"] == "detached"
    pid = old[0]["pid"]
    assert len(read_json(first / "inject" / f"detached-{pid}.json")["hooks_removed"]) == 7
    old_steps = [r for r in old if r["kind"] == "step"]
    new_steps = [r for r in new if r["kind"] == "step"]
    assert (len(old_steps), len(new_steps)) == (15, 20)
    assert old_steps[-1]["t"] < new_steps[0]["t"]
    assert len(matched_steps(job, new, injected_at=20)) >= 17
    assert len(job.stderr.splitlines()) == 2


def test_when_the_attacher_is_gone_the_agent_unloads_drops_its_window_and_workers_stay_quiet(
    tmp_path: Path,
) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    run_dir = tmp_path / "attach"
    statement = request(
        run_dir, 1, int(gone.stdout), window_first_step=1, window_steps=1000, window_every_s=1000
    )
    plan = {3: ["exec", str(statement)], 5: ["workers"], 8: ["wait", "1.5"]}
    job = run_injectable(tmp_path, plan, steps=12)

    assert job.state(3)["threads"] == ["torchtop-inject"]
    after = job.state(8)
    assert after["changed"] == [] and after["threads"] == [] and not after["profiling"]
    found = records(run_dir)  # the job's file alone: the workers never stepped
    assert "window" not in [r["kind"] for r in found]
    notes = [r["message"] for r in found if r["kind"] == "note"]
    assert "a profiler window was dropped: the attach ended while it was open" in notes
    assert found[-1]["kind"] == "bye" and found[-1]["reason"] == "detached"


def test_a_request_that_is_gone_makes_the_statement_do_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "attach"
    statement = request(run_dir, 1, os.getpid())
    (run_dir / "inject" / "request-1.json").unlink()
    job = run_injectable(tmp_path, {2: ["wait", "0"], 3: ["exec", str(statement)]}, steps=6)

    assert job.stderr == ""
    assert job.state(3)["changed"] == [] and job.state(3)["threads"] == []
    assert job.state(3)["main_names"] == job.state(2)["main_names"]
    assert sorted(p.name for p in run_dir.rglob("*")) == ["inject"]


def test_a_job_under_torchtop_run_answers_already_agent_and_gets_nothing_more(
    tmp_path: Path,
) -> None:
    run_dir, attach_dir = tmp_path / "run", tmp_path / "attach"
    statement = request(attach_dir, 1, os.getpid())
    plan = json.dumps({"3": ["exec", str(statement)]})
    finished = run_job(run_dir, "injectable", "--steps", "6", "--plan", plan)

    assert finished.returncode == 0, finished.stderr
    ack = read_json(attach_dir / "inject" / "ack-1.json")
    assert (ack["ok"], ack["already_agent"]) == (True, True)
    job = Job(finished.stdout, finished.stderr, finished.returncode)
    assert job.state(3)["post_hooks"] == 1 and "torchtop-inject" not in job.state(3)["threads"]
    assert "attach --inject" not in finished.stderr
    assert not (attach_dir / "events").exists()


def test_a_job_that_has_not_imported_torch_is_answered_with_one_line(tmp_path: Path) -> None:
    run_dir = tmp_path / "attach"
    statement = request(run_dir, 1, os.getpid())
    code = f"import sys; exec(open({str(statement)!r}).read()); print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=JOB_TIMEOUT_S, check=False)  # fmt: skip

    assert (result.returncode, result.stdout, result.stderr) == (0, "False\n", "")
    ack = read_json(run_dir / "inject" / "ack-1.json")
    assert ack["ok"] is False and ack["torch"] is None
    assert ack["error"] == "the job has not imported torch; nothing to hook"
