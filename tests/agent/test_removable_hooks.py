"""The parts the injected agent's detach rests on, in this process: undoable patches, calls
run on the main thread, and telling when the optimizer is inside its post hook loop."""

from __future__ import annotations

import sys
import threading
import time
from types import FrameType

import pytest

torch = pytest.importorskip("torch")

from torchtop.agent import main_thread  # noqa: E402
from torchtop.agent.hooks import patch  # noqa: E402
from torchtop.agent.injected_agent import post_hooks_running  # noqa: E402


class Base:
    def greet(self) -> str:
        return "base"


class Child(Base):
    def own(self) -> str:
        return "own"


def test_undoing_a_patch_of_an_inherited_method_deletes_it_again() -> None:
    undo = patch(Child, "greet", lambda self: "patched")
    assert Child().greet() == "patched"
    undo()
    assert "greet" not in vars(Child) and Child().greet() == "base"


def test_undoing_a_patch_puts_the_very_same_object_back() -> None:
    original = vars(Child)["own"]
    undo = patch(Child, "own", lambda self: "patched")
    undo()
    assert vars(Child)["own"] is original


def test_a_wrapper_someone_put_over_ours_is_left_in_place_by_the_undo() -> None:
    original = vars(Child)["own"]
    ours = lambda self: "ours"  # noqa: E731
    undo = patch(Child, "own", ours)
    theirs = lambda self: "theirs"  # noqa: E731
    Child.own = theirs  # type: ignore[method-assign]
    undo()
    assert vars(Child)["own"] is theirs
    Child.own = original  # type: ignore[method-assign]


def test_a_call_queued_from_another_thread_runs_on_the_main_thread() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("pending calls run on the main thread only")
    ran_on: list[str] = []
    queued: list[bool] = []

    def queue() -> None:
        queued.append(main_thread.call_soon(lambda: ran_on.append(threading.current_thread().name)))

    thread = threading.Thread(target=queue)
    thread.start()
    thread.join()
    for _ in range(5000):  # Python keeps running here, so the pending call gets its turn
        if ran_on:
            break
        time.sleep(0.001)
    assert queued == [True] and ran_on == ["MainThread"]


def test_the_post_hook_loop_is_told_from_the_rest_of_an_optimizer_step() -> None:
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    seen: dict[str, bool] = {}

    def pre_hook(opt: object, args: object, kwargs: object) -> None:
        frame: FrameType | None = sys._getframe()
        seen["pre"] = post_hooks_running(frame)

    def post_hook(opt: object, args: object, kwargs: object) -> None:
        seen["post"] = post_hooks_running(sys._getframe())

    pre = optimizer.register_step_pre_hook(pre_hook)
    post = optimizer.register_step_post_hook(post_hook)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    pre.remove()
    post.remove()
    assert seen == {"pre": False, "post": True}
    assert not post_hooks_running(sys._getframe())
