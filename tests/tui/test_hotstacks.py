"""Hot stacks: each sample once, at the user's innermost line (or a library thread's innermost
frame), so the shares are of one whole; samples taken while importing set aside."""

from __future__ import annotations

from tests.tui.replay import frame
from torchtop.runs.records import StackFrame, StackProcess, StacksSample, StackThread
from torchtop.tui.hotstacks import HotStacks, hot_frames, is_user_code

SITE = "/venv/lib/python3.11/site-packages"


def dump(*threads: StackThread) -> StacksSample:
    return StacksSample(t=0.0, processes=[StackProcess(pid=1, role="main", threads=list(threads))])


def thread(
    *frames: StackFrame, name: str = "MainThread", active: bool = True, tid: int = 1
) -> StackThread:
    return StackThread(tid=tid, name=name, active=active, frames=list(frames))


LOAD = thread(
    frame("sleep", f"{SITE}/slowfs/io.py", 10),
    frame("__getitem__", "/home/ada/data.py", 20),
    frame("main", "/home/ada/train.py", 5),
)
STEP = thread(frame("mm", f"{SITE}/torch/functional.py", 9), frame("main", "/home/ada/train.py", 7))


IMPORTING = thread(
    frame("<module>", f"{SITE}/torch/__init__.py", 2),
    frame("_find_and_load", "<frozen importlib._bootstrap>", 1176),
    frame("<module>", "/home/ada/train.py", 1),
)
HELPER = thread(
    frame("_list_forever", "/src/torchtop/agent/children.py", 9), name="torchtop-children", tid=2
)
LIBRARY_THREAD = thread(frame("run", f"{SITE}/slowfs/pool.py", 4), name="pool", tid=3)


def test_each_sample_counts_once_at_the_users_innermost_line_and_the_shares_add_to_100() -> None:
    hot = hot_frames([dump(LOAD), dump(LOAD), dump(STEP), dump(LOAD)])
    assert [(h.where, h.share, h.user) for h in hot.frames] == [
        ("ada/data.py:20", 0.75, True),
        ("ada/train.py:7", 0.25, True),
    ]
    assert sum(h.share for h in hot.frames) == 1.0 and hot.samples == 4
    # Where the time under the line goes, in the library, is kept for its details.
    assert hot.frames[0].inside == (("sleep", "slowfs/io.py:10", 1.0),)


def test_a_stack_with_no_user_frame_counts_at_its_innermost_frame_after_the_users_lines() -> None:
    hot = hot_frames([dump(STEP, LIBRARY_THREAD), dump(STEP)])
    assert [(h.where, h.share, h.user) for h in hot.frames] == [
        ("ada/train.py:7", 2 / 3, True),
        ("slowfs/pool.py:4", 1 / 3, False),
    ]


def test_samples_taken_while_importing_are_set_aside_and_counted_apart() -> None:
    hot = hot_frames([dump(IMPORTING), dump(IMPORTING), dump(STEP)])
    assert [(h.where, h.share) for h in hot.frames] == [("ada/train.py:7", 1.0)]
    assert (hot.samples, hot.importing) == (1, 2)


def test_torchtops_own_threads_in_the_job_are_not_counted() -> None:
    hot = hot_frames([dump(STEP, HELPER)])
    assert [h.where for h in hot.frames] == ["ada/train.py:7"] and hot.samples == 1


def test_idle_helper_threads_are_not_counted() -> None:
    waits = frame("wait", "/usr/lib/python3.11/threading.py", 3)
    idle = thread(waits, name="pin", active=False, tid=2)
    hot = hot_frames([dump(STEP, idle)])
    assert all("threading" not in h.file for h in hot.frames)
    assert hot.frames[0].share == 1.0


def test_library_paths_and_the_agent_are_not_the_users_code() -> None:
    assert is_user_code("/home/ada/train.py")
    assert not is_user_code(f"{SITE}/torch/nn/modules/module.py")
    assert not is_user_code("/usr/lib/python3.11/threading.py")
    assert not is_user_code("<frozen importlib._bootstrap>")
    assert not is_user_code("/work/src/torchtop/agent/hooks.py")


def test_no_dumps_means_no_hot_frames() -> None:
    assert hot_frames([]) == HotStacks()
