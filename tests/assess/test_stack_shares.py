"""Shares of a job's stack samples by place, from native dumps (`assess.stack_shares`).

The records are built as the native collector writes them; the frames are those of real dumps
(tests/diagnosis/test_frames.py says where they come from).
"""

from __future__ import annotations

from torchtop.assess.attached import native_metrics
from torchtop.assess.stack_shares import INTERPRETER, shares_of
from torchtop.diagnosis.frames import BETWEEN, OP, load_frame_patterns
from torchtop.runs.records import (
    NativeFrame,
    StackFrame,
    StackProcess,
    StacksSample,
    StackThread,
    TaskTime,
)

PID = 4242
BACKWARD = [
    StackFrame(function="_engine_run_backward", file="/x/torch/autograd/graph.py", line=979),
    StackFrame(function="<module>", file="/job/train.py", line=13),
]
LOOP = [StackFrame(function="<module>", file="/job/train.py", line=10)]
CONDITION_WAIT = [
    NativeFrame(function="pthread_cond_wait", library="libc.so.6"),
    NativeFrame(function="torch::autograd::Engine::thread_main", library="libtorch_cpu.so"),
]
TO_COPY = [NativeFrame(function="at::native::_to_copy", library="libtorch_cpu.so")]
ADDMM = [NativeFrame(function="at::native::addmm_out_cpu", library="libtorch_cpu.so")]


def dump(
    frames: list[StackFrame],
    native: list[NativeFrame] | None,
    active: bool = True,
    tasks: list[TaskTime] | None = None,
    pid: int = PID,
) -> StacksSample:
    thread = StackThread(tid=pid, name="MainThread", active=active, frames=frames)
    if native is not None:
        thread = StackThread(
            tid=pid, name="MainThread", active=active, frames=frames, native=native
        )
    process = StackProcess(pid=pid, role="main", threads=[thread])
    if tasks is not None:
        process = StackProcess(pid=pid, role="main", threads=[thread], tasks=tasks)
    return StacksSample(t=0.0, processes=[process], native=True)


def gloo(cpu_s: float) -> list[TaskTime]:
    return [
        TaskTime(tid=PID, name="python", cpu_s=10.0),
        TaskTime(tid=PID + 1, name="pt_gloo_runloop", cpu_s=cpu_s),
    ]


def test_a_copy_under_a_python_line_is_a_copy_and_python_alone_is_the_interpreter() -> None:
    records = [dump(LOOP, TO_COPY), dump(LOOP, TO_COPY), dump(LOOP, ADDMM), dump(LOOP, None)]
    found = shares_of(records, load_frame_patterns())
    assert found.shares == {"copy": 0.5, OP: 0.25, INTERPRETER: 0.25}
    assert found.native and found.samples == 4


def test_waiting_in_backward_while_gloo_works_is_communication_and_not_when_gloo_sleeps() -> None:
    patterns = load_frame_patterns()
    working = [dump(BACKWARD, CONDITION_WAIT, False, gloo(1.0 + i)) for i in range(4)]
    # The first look has nothing to compare gloo's CPU time with: the autograd engine's wait,
    # time between operators.
    assert shares_of(working, patterns).shares == {"collective": 0.75, BETWEEN: 0.25}
    sleeping = [dump(BACKWARD, CONDITION_WAIT, False, gloo(1.0)) for _ in range(4)]
    assert shares_of(sleeping, patterns).shares == {BETWEEN: 1.0}


def test_the_intra_op_pool_is_counted_from_the_threads_that_worked_between_two_looks() -> None:
    def tasks(cpu_s: float) -> list[TaskTime]:
        pool = [TaskTime(tid=PID + i, name="python", cpu_s=cpu_s) for i in range(1, 8)]
        helper = TaskTime(tid=PID + 20, name="python", cpu_s=0.08)  # started at import, asleep
        named = TaskTime(tid=PID + 30, name="pt_gloo_runloop", cpu_s=cpu_s)
        return [TaskTime(tid=PID, name="python", cpu_s=cpu_s), *pool, helper, named]

    records = [dump(LOOP, ADDMM, tasks=tasks(1.0)), dump(LOOP, ADDMM, tasks=tasks(2.0))]
    assert shares_of(records, load_frame_patterns()).intra_op_threads == 8
    assert shares_of(records[:1], load_frame_patterns()).intra_op_threads is None


def test_one_process_shares_are_those_of_its_own_records() -> None:
    records = [dump(LOOP, TO_COPY), dump(LOOP, ADDMM, pid=PID + 100)]
    patterns = load_frame_patterns()
    assert shares_of(records, patterns, pid=PID).shares == {"copy": 1.0}
    assert shares_of(records, patterns, pid=PID + 100).shares == {OP: 1.0}


def test_native_shares_become_the_rules_metrics_copies_measured_and_the_breakdown_whole() -> None:
    records = [dump(LOOP, TO_COPY), dump(LOOP, TO_COPY), dump(LOOP, ADDMM), dump(LOOP, None)]
    metrics, breakdown = native_metrics(shares_of(records, load_frame_patterns()), None, 2)
    assert metrics["memcpy_share"] == 0.5, "measured from the frames, no longer None"
    assert breakdown["memcpy"] == 0.5 and breakdown["cpu_exec"] == 0.25
    assert breakdown["other"] == 0.25, "Python with no compiled frame is between operators"
    assert abs(sum(breakdown.values()) - 1.0) < 1e-9
    assert metrics["stack_samples"] == 4 and metrics["steps_count"] is None
    assert metrics["host_cpu_count"] == 2 and metrics["has_gpu"] is False
