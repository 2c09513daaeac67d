"""sample_host on a real process tree: shape, roles, and rates from the second sample on."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from tests.collectors.conftest import Spawn, written
from torchtop.collectors.host import HostCollector, sample_host

JOB = """
import multiprocessing as mp, time

def child():
    block = bytearray(8 * 2**20)  # resident memory to see
    while True:
        sum(range(20000))
        time.sleep(0.01)

if __name__ == "__main__":
    children = [mp.Process(target=child) for _ in range(2)]
    for c in children:
        c.start()
    print("ready", flush=True)
    time.sleep(120)
"""

MACHINE_FIELDS = {
    "kind", "t", "cpu_pct", "per_cpu_pct", "iowait_pct", "mem_used_bytes", "mem_total_bytes",
    "disk_read_bytes_per_s", "disk_write_bytes_per_s", "net_recv_bytes_per_s",
    "net_sent_bytes_per_s", "processes", "steal_pct", "others_cpu_pct", "others",
}  # fmt: skip
PROCESS_FIELDS = {
    "pid", "ppid", "name", "role", "cpu_pct", "rss_bytes", "threads", "read_bytes_per_s",
    "write_bytes_per_s", "runqueue_wait_pct", "vm_bytes", "as_limit_bytes",
}  # fmt: skip
RATES = ("disk_read_bytes_per_s", "disk_write_bytes_per_s", "net_recv_bytes_per_s")


def vm_size(pid: int) -> int:
    """VmSize, as /proc/PID/status writes it (kB)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmSize for {pid}")


def address_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft


def test_the_first_sample_has_the_tree_and_no_rates_yet(spawn: Spawn) -> None:
    job = spawn(JOB)
    sampled, _ = sample_host(job.pid, None)
    record = written(sampled)
    assert set(record) == MACHINE_FIELDS
    assert record["kind"] == "host"
    assert record["cpu_pct"] is None and record["per_cpu_pct"] is None
    assert all(record[name] is None for name in RATES)
    assert 0 < record["mem_used_bytes"] < record["mem_total_bytes"]
    processes = {p["pid"]: p for p in record["processes"]}
    assert processes[job.pid]["role"] == "main"
    workers = [p for p in processes.values() if p["role"] == "worker"]
    assert len(workers) == 2 and all(w["ppid"] == job.pid for w in workers)
    for process in processes.values():
        assert set(process) == PROCESS_FIELDS
        assert process["rss_bytes"] > 0 and process["threads"] >= 1
        assert process["cpu_pct"] is None and process["read_bytes_per_s"] is None
        assert process["runqueue_wait_pct"] is None
        assert process["vm_bytes"] == vm_size(process["pid"])  # a sleeping process: stable
        assert process["as_limit_bytes"] == address_limit()  # inherited from this process
    # Other processes' CPU is a difference between two samples: none yet.
    assert record["others_cpu_pct"] is None and record["others"] == []


def test_the_second_sample_measures_cpu_and_rates_against_the_first(spawn: Spawn) -> None:
    job = spawn(JOB)
    _, state = sample_host(job.pid, None)
    time.sleep(0.5)
    sampled, _ = sample_host(job.pid, state)
    record = written(sampled)
    assert 0 <= record["cpu_pct"] <= 100
    assert len(record["per_cpu_pct"]) >= 1
    assert record["iowait_pct"] is not None  # Linux counts iowait
    assert all(record[name] is not None and record[name] >= 0 for name in RATES)
    workers = [p for p in record["processes"] if p["role"] == "worker"]
    assert len(workers) == 2
    assert all(w["cpu_pct"] is not None and w["cpu_pct"] > 0 for w in workers)
    main = next(p for p in record["processes"] if p["role"] == "main")
    assert main["read_bytes_per_s"] is not None and main["write_bytes_per_s"] is not None
    assert all(p["runqueue_wait_pct"] is not None and p["runqueue_wait_pct"] >= 0
               for p in record["processes"])  # fmt: skip
    assert record["others_cpu_pct"] is not None and record["others_cpu_pct"] >= 0
    assert record["steal_pct"] is not None  # Linux counts steal
    job_pids = {p["pid"] for p in record["processes"]}
    assert not job_pids & {p["pid"] for p in record["others"]}


def test_a_process_that_started_since_the_last_sample_has_no_cpu_reading_yet(
    spawn: Spawn,
) -> None:
    job = spawn(JOB)
    _, state = sample_host(job.pid, None)
    state.processes.pop(job.pid)  # as if the main process had not been seen before
    sampled, _ = sample_host(job.pid, state)
    record = written(sampled)
    main = next(p for p in record["processes"] if p["pid"] == job.pid)
    assert main["cpu_pct"] is None and main["runqueue_wait_pct"] is None
    assert all(p["cpu_pct"] is not None for p in record["processes"] if p["pid"] != job.pid)


def test_a_finished_job_still_gives_machine_readings_and_an_empty_tree() -> None:
    collector = HostCollector(2**22 + 12345)
    collector.sample()
    time.sleep(0.2)  # CPU times tick every 10 ms: give the second sample some to compare
    record = written(collector.sample())
    assert record["processes"] == []
    assert record["cpu_pct"] is not None
