"""Roles in the job's process tree: main, worker, launcher, other, on real processes."""

from __future__ import annotations

import sys

import pytest

from tests.collectors.conftest import Spawn
from torchtop.collectors.tree import is_launcher, is_python, job_pids, job_tree

TWO_CHILDREN = """
import multiprocessing as mp, sys, time

def child():
    time.sleep(120)

if __name__ == "__main__":
    mp.set_start_method(sys.argv[1] if len(sys.argv) > 1 else "fork")
    children = [mp.Process(target=child) for _ in range(2)]
    for c in children:
        c.start()
    print("ready", flush=True)
    time.sleep(120)
"""

# A stand-in for torchrun: a python script named torchrun that starts python training processes.
LAUNCHER = """
import subprocess, sys, time
trainers = [
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]) for _ in range(2)
]
print("ready", flush=True)
time.sleep(120)
"""


def roles(root_pid: int) -> dict[int, str]:
    return {member.pid: member.role for member in job_tree(root_pid)}


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_multiprocessing_children_of_the_training_process_are_workers(
    spawn: Spawn, start_method: str
) -> None:
    job = spawn(TWO_CHILDREN, command=lambda script: [sys.executable, script, start_method])
    found = roles(job.pid)
    assert found[job.pid] == "main"
    workers = sorted(pid for pid, role in found.items() if role == "worker")
    assert len(workers) == 2
    # spawn also starts multiprocessing's resource tracker: a helper, not a worker
    assert set(found.values()) <= {"main", "worker", "other"}
    assert sorted(job_pids(job.pid)) == sorted(found)


def test_a_torchrun_launcher_is_marked_launcher_and_its_python_children_main(
    spawn: Spawn,
) -> None:
    job = spawn(LAUNCHER, name="torchrun")
    found = roles(job.pid)
    assert found[job.pid] == "launcher"
    assert sorted(role for pid, role in found.items() if pid != job.pid) == ["main", "main"]


def test_a_shell_wrapper_is_other_and_the_python_it_starts_is_main(spawn: Spawn) -> None:
    job = spawn(
        TWO_CHILDREN,
        command=lambda script: ["/bin/sh", "-c", f"{sys.executable} {script}; true"],
    )
    found = roles(job.pid)
    assert found[job.pid] == "other"
    assert sorted(found.values()) == ["main", "other", "worker", "worker"]


def test_a_vanished_root_gives_an_empty_tree() -> None:
    assert job_tree(2**22 + 12345) == []


def test_launchers_and_python_are_recognised_from_the_command_line() -> None:
    assert is_launcher(("/venv/bin/python3.11", "/venv/bin/torchrun", "--nproc-per-node=2"))
    assert is_launcher(("torchrun", "train.py"))
    assert is_launcher(("python", "-m", "torch.distributed.run", "train.py"))
    assert not is_launcher(("python", "train.py", "--note", "torchrun"))
    assert is_python(("/usr/bin/python3.11", "train.py"))
    assert not is_python(("/bin/sh", "-c", "python train.py"))
    assert not is_python(())
