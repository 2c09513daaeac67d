"""The run folder's one schema: what the writers wrote before it reads the same, and what a
newer writer adds is skipped and counted, never fatal."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from tests.conftest import CONTEXT
from torchtop.assess.run import assess
from torchtop.assess.windows import WindowCache
from torchtop.diagnosis.rules import load_rules
from torchtop.model.trial_entry import FixEntry, SinceRelaunch
from torchtop.runs import records
from torchtop.runs.codec import Decoded, decode_document, decode_line, encode_document, encode_line
from torchtop.runs.journal import JournalWriter, write_record
from torchtop.runs.layout import RunLayout
from torchtop.runs.records import (
    ExitRecord,
    Hello,
    JournalRecord,
    RunRecord,
    Settings,
    StacksSample,
    Step,
)
from torchtop.runs.state import load_run

# A revert as the fix tracker wrote it before the schema: the report's fix and since_relaunch.
REVERT_LINE = (
    b'{"kind":"revert","t":9.5,"at":"2026-11-20T10:00:00+00:00","trial":1,"fixes":[{"knob":'
    b'"dataloader.num_workers","value":4,"apply":"override","description":"Load in 4."}],'
    b'"from_run_dir":"RUN/jobs/01","run_dir":"RUN/jobs/02","command":["python","t.py"],'
    b'"since_relaunch":{"steps":412,"duration_s":40.0,"steps_per_s":9.8,"speedup":1.96,'
    b'"holds":false,"reason":"short","recent_steps":30,"recent_steps_per_s":9.8,"p_value":0.01,'
    b'"margin":0.15,"checked_at":"2026-11-20T09:59:58+00:00"}}'
)
# Lines as the dict-based writers wrote them before the schema existed (json, compact).
OLD_LINES = [
    b'{"kind":"hello","t":1.5,"pid":7,"ppid":1,"rank":null,"local_rank":null,"world_size":null,'
    b'"argv":["train.py"],"python":"3.11.7","torch":"2.13.0","host":"box"}',
    b'{"kind":"step","step":0,"wall_s":null,"data_wait_s":null,"h2d_s":null,"sync_s":null,"t":2.0}',
    b'{"kind":"step","step":1,"wall_s":0.25,"data_wait_s":0.1,"h2d_s":null,"sync_s":null,"t":2.25}',
    b'{"kind":"settings","dataloader":{"num_workers":0,"pin_memory":false,"batch_size":32,'
    b'"persistent_workers":false,"prefetch_factor":null},"threads":{"torch_num_threads":2,'
    b'"torch_interop_threads":2,"omp_num_threads_env":null,"openmp_runtime":"gnu",'
    b'"usable_cores":2},"device":"cpu","amp":false,"compiled":false,"cli_options":[{"flags":'
    b'["--lr"],"dest":"lr","type":"float","default":0.1,"value":0.1}],"overrides":{},'
    b'"step_signal":"optimizer","step_signal_held":null,"t":2.3}',
    b'{"kind":"window","t":3.0,"path":"traces/w.pt.trace.json.gz","first_step":5,"last_step":8}',
    b'{"kind":"note","t":3.1,"message":"profiler window: a warning"}',
    b'{"kind":"bye","t":4.0,"reason":"exit"}',
    b'{"kind":"host","t":1.0,"cpu_pct":null,"per_cpu_pct":null,"iowait_pct":null,'
    b'"mem_used_bytes":100,"mem_total_bytes":200,"disk_read_bytes_per_s":null,'
    b'"disk_write_bytes_per_s":null,"net_recv_bytes_per_s":null,"net_sent_bytes_per_s":null,'
    b'"processes":[{"pid":7,"ppid":1,"name":"python","role":"main","cpu_pct":null,'
    b'"rss_bytes":1000,"threads":3,"read_bytes_per_s":null,"write_bytes_per_s":null}]}',
    b'{"kind":"stacks","t":1.0,"processes":[{"pid":7,"role":"main","threads":[{"tid":7,'
    b'"name":"MainThread","active":true,"frames":[{"function":"f","file":"t.py","line":3}]}]}]}',
    b'{"kind":"unavailable","t":1.0,"reason":"no NVIDIA GPU found"}',
    REVERT_LINE,
]


@pytest.mark.parametrize("line", OLD_LINES, ids=lambda line: json.loads(line)["kind"])
def test_a_line_written_before_the_schema_reads_and_writes_back_the_same(line: bytes) -> None:
    counts = Decoded()
    record = decode_line(line, counts)
    assert record is not None and counts == Decoded()
    assert encode_line(record) == line + b"\n"


def test_a_record_of_a_kind_from_a_newer_writer_is_skipped_and_counted() -> None:
    counts = Decoded()
    assert decode_line(b'{"kind":"gradient_norm","t":1.0,"norm":3.5}', counts) is None
    assert counts == Decoded(unknown_kinds=1)


def test_a_field_from_a_newer_writer_is_dropped_and_counted_at_any_depth() -> None:
    counts = Decoded()
    line = (
        b'{"kind":"stacks","t":1.0,"gil_held":true,"processes":[{"pid":7,"role":"main",'
        b'"threads":[{"tid":7,"frames":[{"function":"f","file":"t.py","line":3,"col":9}]}]}]}'
    )
    record = decode_line(line, counts)
    assert isinstance(record, StacksSample)
    assert record.processes[0].threads[0].frames[0].line == 3
    assert counts == Decoded(unknown_fields=2)


def test_a_revert_holds_the_reports_own_fix_and_since_relaunch_shapes() -> None:
    counts = Decoded()
    newer = REVERT_LINE.replace(b'"margin":0.15,', b'"margin":0.15,"cpu_pct":80,')
    record = decode_line(newer, counts)
    assert isinstance(record, records.Revert) and counts == Decoded(unknown_fields=1)
    assert record.fixes == [FixEntry("dataloader.num_workers", 4, "override", "Load in 4.")]
    assert isinstance(record.since_relaunch, SinceRelaunch)
    assert record.since_relaunch.holds is False and record.since_relaunch.steps == 412


def test_a_line_that_breaks_the_schema_is_a_bad_line_not_an_error() -> None:
    counts = Decoded()
    assert decode_line(b'{"kind":"step","step":"three","wall_s":0.1}', counts) is None
    assert decode_line(b'{"kind":7}', counts) is None
    assert decode_line(b"[1, 2]", counts) is None
    assert counts == Decoded(bad_lines=3)


def test_a_run_folder_from_a_newer_writer_is_assessed_and_the_report_says_what_was_skipped(
    tmp_path: Path,
) -> None:
    layout = RunLayout(tmp_path / "run")
    layout.create()
    write_record(layout.run_json, RunRecord(kind="run", command=["python", "t.py"], pid=7))
    with JournalWriter(layout.agent_events(7)) as writer:
        writer.write(Hello(t=0.0, pid=7))
        writer.write(Settings(t=0.0, device="cpu"))
        for number in range(12):
            writer.write(Step(step=number, wall_s=0.1, data_wait_s=0.0, t=0.1 * number))
    with layout.agent_events(7).open("ab") as events:
        events.write(b'{"kind":"gradient_norm","t":1.3,"norm":3.5}\n')
        events.write(b'{"kind":"step","step":12,"wall_s":0.1,"t":1.3,"gpu_s":0.05}\n')

    state = load_run(layout.root)
    report = assess(state, WindowCache().latest(state), load_rules(), context=CONTEXT)

    assert (state.unknown_kinds, state.unknown_fields, state.torn_lines) == (1, 1, 0)
    assert state.processes[7].steps_seen == 13
    assert any("1 record(s) of a kind this torchtop does not know" in n for n in report.notes)
    assert any("ignored 1 record field(s)" in n for n in report.notes)


def test_run_and_exit_documents_are_written_as_before_and_read_back() -> None:
    run = RunRecord(kind="attach", command=["python", "t.py"], cwd="/w", pid=7, cpu_count=2)
    text = encode_document(run)
    assert list(json.loads(text)) == [
        "schema", "kind", "command", "cwd", "pid", "started_at", "host", "cpu_count", "torchtop",
    ]  # fmt: skip
    assert decode_document(text.encode(), RunRecord) == run
    ended = ExitRecord(ended_at=5.0, how="detached")
    assert json.loads(encode_document(ended)) == {
        "kind": "exit", "ended_at": 5.0, "how": "detached", "exit_status": None, "signal": None,
    }  # fmt: skip
    newer = b'{"kind": "exit", "how": "exited", "exit_status": 0, "peak_rss_bytes": 9}'
    assert decode_document(newer, ExitRecord) == ExitRecord(how="exited", exit_status=0)


def test_every_journal_record_kind_is_one_of_the_tagged_union() -> None:
    structs = [
        value
        for value in vars(records).values()
        if isinstance(value, type)
        and issubclass(value, JournalRecord)
        and value is not JournalRecord
    ]
    assert set(structs) == set(records.RECORD_TYPES)
    assert set(typing.get_args(records.Record)) == set(structs)
    tags = [s.__struct_config__.tag for s in structs]
    assert len(set(tags)) == len(tags)
