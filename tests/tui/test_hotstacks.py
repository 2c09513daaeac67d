"""Hot stacks: the user's code first, by where its time is spent; then the library's hot spots."""

from __future__ import annotations

from tests.tui.replay import frame
from torchtop.runs.records import StackFrame, StackProcess, StacksSample, StackThread
from torchtop.tui.hotstacks import hot_frames, is_user_code

SITE = "/venv/lib/python3.11/site-packages"


def dump(*threads: StackThread) -> StacksSample:
    return StacksSample(t=0.0, processes=[StackProcess(pid=1, role="main", threads=list(threads))])


def thread(*frames: StackFrame, name: str = "MainThread", active: bool = True) -> StackThread:
    return StackThread(tid=1, name=name, active=active, frames=list(frames))


LOAD = thread(
    frame("sleep", f"{SITE}/slowfs/io.py", 10),
    frame("__getitem__", "/home/ada/data.py", 20),
    frame("main", "/home/ada/train.py", 5),
)
STEP = thread(frame("mm", f"{SITE}/torch/functional.py", 9), frame("main", "/home/ada/train.py", 7))


def test_the_users_innermost_frames_come_first_then_the_library_hot_spots() -> None:
    hot = hot_frames([dump(LOAD), dump(LOAD), dump(STEP), dump(LOAD)])
    assert [(h.where, h.share, h.user) for h in hot] == [
        ("ada/data.py:20", 0.75, True),
        ("ada/train.py:7", 0.25, True),
        ("slowfs/io.py:10", 0.75, False),
        ("torch/functional.py:9", 0.25, False),
    ]


def test_idle_helper_threads_are_not_counted() -> None:
    idle = thread(frame("wait", "/usr/lib/python3.11/threading.py", 3), name="pin", active=False)
    hot = hot_frames([dump(STEP, idle)])
    assert all("threading" not in h.file for h in hot)
    assert hot[0].share == 1.0


def test_library_paths_and_the_agent_are_not_the_users_code() -> None:
    assert is_user_code("/home/ada/train.py")
    assert not is_user_code(f"{SITE}/torch/nn/modules/module.py")
    assert not is_user_code("/usr/lib/python3.11/threading.py")
    assert not is_user_code("<frozen importlib._bootstrap>")
    assert not is_user_code("/work/src/torchtop/agent/hooks.py")


def test_no_dumps_means_no_hot_frames() -> None:
    assert hot_frames([]) == ()
