"""A child killed by a signal gets its `bye` from its parent's agent, and the parent's own
`wait` still sees the status (`agent.children`)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.agent.running import run_job
from tests.tables import tables
from torchtop.agent.children import SEEN_BY_PARENT, bye_of, bye_of_returncode, record_end
from torchtop.runs.journal import JournalReader
from torchtop.runs.records import Bye
from torchtop.runs.state import RunState, load_run

# The parent (with the agent: it imports torch) starts two children that step once, then one
# SIGKILLs itself and the other gets a SIGTERM from the parent, as torchrun sends its ranks.
PARENT = """
import os, signal, subprocess, sys, time, torch
CHILD = '''
import os, signal, sys, time, torch
model = torch.nn.Linear(4, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):  # slower than the agent's 50 ms batching: each step is written at once
    time.sleep(0.1)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
time.sleep(0.1)
print("stepped", flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
'''
killed = subprocess.Popen([sys.executable, "-c", CHILD, "kill"])
stopped = subprocess.Popen([sys.executable, "-c", CHILD, "wait"], stdout=subprocess.PIPE)
assert stopped.stdout.readline() == b"stepped\\n"
time.sleep(1.0)  # the agent lists its children every 0.5 s
stopped.send_signal(signal.SIGTERM)
# Polled, as torchrun polls its ranks: a parent blocked in wait() may reap first (no bye then).
while killed.poll() is None or stopped.poll() is None:
    time.sleep(0.1)
print("codes", killed.returncode, stopped.returncode, killed.pid, stopped.pid, flush=True)
"""


@pytest.mark.slow
def test_children_killed_by_signals_get_a_bye_from_the_parent_which_still_sees_their_status(
    tmp_path: Path,
) -> None:
    job = run_job(tmp_path / "run", ["-c", PARENT])
    assert job.returncode == 0, job.stderr
    codes = job.stdout.split("codes ")[1].split()
    assert codes[:2] == ["-9", "-15"]  # the job's own wait got the statuses, unreaped by us
    for pid, name in zip(codes[2:], ("SIGKILL", "SIGTERM"), strict=True):
        records = tables(
            JournalReader(tmp_path / "run" / "events" / f"agent-{pid}.jsonl").read_new()
        )
        assert sum(r["kind"] == "step" for r in records) == 3
        assert records[-1]["kind"] == "bye"
        assert (records[-1]["signal"], records[-1]["reason"]) == (name, SEEN_BY_PARENT)


def test_a_bye_of_an_exit_status_carries_the_code_and_no_signal() -> None:
    bye = bye_of(1, 3)  # CLD_EXITED
    assert (bye.exit_code, bye.reason) == (3, SEEN_BY_PARENT)
    assert bye_of(2, int(signal.SIGKILL)).signal == "SIGKILL"  # CLD_KILLED


def test_a_journal_whose_bye_already_says_how_it_ended_or_is_missing_is_left_alone(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "agent-1.jsonl"
    assert not record_end(journal, Bye(t=1.0, signal="SIGKILL"))
    assert not journal.exists()
    journal.write_text('{"kind":"step","step":0,"t":1.0}\n{"kind":"bye","t":2.0,"exit_code":0}\n')
    before = journal.read_text()
    assert not record_end(journal, bye_of_returncode(0))
    assert journal.read_text() == before


def test_the_parents_word_follows_a_bye_written_before_the_process_aborted(
    tmp_path: Path,
) -> None:
    # The agent's `bye` at Python's exit said 0; the C++ teardown then aborted.
    journal = tmp_path / "agent-1.jsonl"
    journal.write_text(
        '{"kind":"step","step":0,"wall_s":null,"t":1.0}\n{"kind":"bye","t":2.0,"exit_code":0}\n'
    )
    assert record_end(journal, bye_of_returncode(-int(signal.SIGABRT)))
    assert not record_end(journal, bye_of_returncode(-int(signal.SIGABRT)))  # said once
    records = tables(JournalReader(journal).read_new(final=True))
    assert [r["kind"] for r in records] == ["step", "bye", "bye"]
    assert (records[-1]["signal"], records[-1]["reason"]) == ("SIGABRT", SEEN_BY_PARENT)


def test_a_rank_its_launcher_stopped_after_its_own_exception_ends_as_the_launcher_saw_it(
    tmp_path: Path,
) -> None:
    # Its collective failed (exit 1, with the error), then torchrun's SIGTERM came mid-teardown.
    journal = tmp_path / "agent-1.jsonl"
    journal.write_text(
        '{"kind":"bye","t":2.0,"exit_code":1,"error":["RuntimeError: Connection closed"]}\n'
    )
    assert record_end(journal, bye_of_returncode(-int(signal.SIGTERM)))
    state = load_run_of(journal)
    (process,) = state.processes.values()
    assert process.bye is not None and process.bye.signal == "SIGTERM"
    assert process.error == ("RuntimeError: Connection closed",)  # its own word is kept


def test_a_line_torn_by_the_death_is_ended_before_the_bye_so_the_bye_reads(tmp_path: Path) -> None:
    journal = tmp_path / "agent-1.jsonl"
    journal.write_text('{"kind":"step","step":0,"wall_s":null,"t":1.0}\n{"kind":"step","st')
    assert record_end(journal, Bye(t=3.0, signal="SIGKILL"))
    reader = JournalReader(journal)
    records = tables(reader.read_new(final=True))
    assert [r["kind"] for r in records] == ["step", "bye"]
    assert records[-1]["signal"] == "SIGKILL"
    assert reader.bad_lines == 1


# A job under the agent (which starts with its `import torch`): it starts a child (so the
# agent's per-child thread runs too) and reads each Python thread's blocked signals from /proc.
BLOCKED_SIGNALS = """
import subprocess, sys, threading, time, torch
from pathlib import Path
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
time.sleep(1.5)  # the agent lists its children every 0.5 s
for thread in threading.enumerate():
    status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    mask = next(line for line in status.splitlines() if line.startswith("SigBlk:"))
    print(thread.name, int(mask.split(":")[1], 16), flush=True)
child.kill()
"""


def test_the_agents_threads_leave_sigint_and_sigterm_to_the_jobs_main_thread(
    tmp_path: Path,
) -> None:
    """A signal sent to the job reaches a thread that does not block it: never an agent's,
    which would leave the main thread asleep in a blocking call while its Ctrl-C waits."""
    result = run_job(tmp_path / "run", ["-c", BLOCKED_SIGNALS])
    assert result.returncode == 0, result.stderr
    blocked = dict(
        (name, int(mask))
        for name, mask in (line.rsplit(" ", 1) for line in result.stdout.splitlines())
    )
    both = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
    agents = {name: mask for name, mask in blocked.items() if name.startswith("torchtop-")}
    assert "torchtop-children" in agents, blocked  # the lister, and the child's waiter:
    assert any(name.startswith("torchtop-child-") for name in agents), blocked
    assert all(mask & both == both for mask in agents.values()), blocked
    assert blocked["MainThread"] & both == 0  # the main thread takes them


def load_run_of(journal: Path) -> RunState:
    """The run state of a folder holding only `journal`, as `events/agent-1.jsonl`."""
    events = journal.parent / "run" / "events"
    events.mkdir(parents=True)
    journal.rename(events / "agent-1.jsonl")
    return load_run(events.parent)
