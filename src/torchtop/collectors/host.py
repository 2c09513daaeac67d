"""The `host` record of samples/host.jsonl: machine CPU, memory, disk, network and the job tree.

`sample_host` is a function of (root pid, previous state): every rate and percentage is a delta
against the previous sample, computed here from raw counters rather than through psutil's
module-global `cpu_percent()` state, so two callers cannot disturb each other and the first
sample honestly says None ("not measured yet") instead of psutil's meaningless 0.0. Per-process
CPU uses `psutil.Process.cpu_percent` on Process objects cached in the state, which is what
makes its percentages refer to the time since the last sample. `HostCollector` holds the state
for a sampler thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import msgspec
import psutil  # type: ignore[import-untyped, unused-ignore]

from torchtop.collectors.others import OthersState, sample_others, thread_waits_ns, wait_pct
from torchtop.collectors.tree import JobProcess, job_tree
from torchtop.runs.records import HostProcess, HostSample


class _Io(NamedTuple):
    read_bytes: int
    write_bytes: int


@dataclass
class HostState:
    """Raw counters of the previous sample, and the Process objects cached across samples."""

    monotonic_s: float
    cpu_times: list[tuple[float, ...]]
    iowait_index: int | None
    disk: _Io | None
    net: _Io | None
    processes: dict[int, psutil.Process] = field(default_factory=dict)
    process_io: dict[int, _Io] = field(default_factory=dict)
    waits_ns: dict[int, dict[int, int] | None] = field(default_factory=dict)
    others: OthersState | None = None


def sample_host(
    tree_root_pid: int, previous: HostState | None, run_root: str | None = None
) -> tuple[HostSample, HostState]:
    """One `host` record and the state the next sample needs; `run_root`: the run folder,
    whose processes started elsewhere (another node's) are not other tenants."""
    now_s = time.monotonic()
    cpu_times = psutil.cpu_times(percpu=True)
    fields = list(cpu_times[0]._fields) if cpu_times else []
    state = HostState(
        monotonic_s=now_s,
        cpu_times=[tuple(times) for times in cpu_times],
        iowait_index=fields.index("iowait") if "iowait" in fields else None,
        disk=_disk_counters(),
        net=_net_counters(),
    )
    elapsed_s = now_s - previous.monotonic_s if previous is not None else None
    old_disk = previous.disk if previous is not None else None
    old_net = previous.net if previous is not None else None
    memory = psutil.virtual_memory()
    t = time.time()
    cpu_pct, per_cpu_pct, iowait_pct = _cpu_fields(previous, state, fields)
    processes = _processes(tree_root_pid, previous, state, elapsed_s)
    others_pct, others, state.others = sample_others(
        {p.pid for p in processes},
        run_root,
        previous.others if previous is not None else None,
        elapsed_s,
    )
    disk_read, disk_write = _io_rates(old_disk, state.disk, elapsed_s)
    net_recv, net_sent = _io_rates(old_net, state.net, elapsed_s)
    record = HostSample(
        t=t,
        cpu_pct=cpu_pct,
        per_cpu_pct=per_cpu_pct,
        iowait_pct=iowait_pct,
        # "used" as total minus available: memory the machine cannot hand out without swapping.
        mem_used_bytes=int(memory.total - memory.available),
        mem_total_bytes=int(memory.total),
        disk_read_bytes_per_s=disk_read,
        disk_write_bytes_per_s=disk_write,
        net_recv_bytes_per_s=net_recv,
        net_sent_bytes_per_s=net_sent,
        processes=processes,
        steal_pct=_steal_pct(previous, state, fields),
        others_cpu_pct=others_pct,
        others=others,
    )
    return record, state


class HostCollector:
    """`sample_host` with its state kept between calls, for a `Sampler`."""

    def __init__(self, tree_root_pid: int, run_root: str | None = None) -> None:
        self.tree_root_pid = tree_root_pid
        self.run_root = run_root
        self._state: HostState | None = None

    def sample(self) -> HostSample:
        record, self._state = sample_host(self.tree_root_pid, self._state, self.run_root)
        return record


def _cpu_fields(
    previous: HostState | None, state: HostState, fields: list[str]
) -> tuple[float | None, list[float | None] | None, float | None]:
    """The machine's busy and iowait percentages and each CPU's, since the previous sample."""
    if previous is None or len(previous.cpu_times) != len(state.cpu_times):
        return None, None, None
    deltas = [
        [now - before for now, before in zip(cur, old, strict=True)]
        for cur, old in zip(state.cpu_times, previous.cpu_times, strict=True)
    ]
    machine = [sum(column) for column in zip(*deltas, strict=True)]
    iowait_pct = None
    if state.iowait_index is not None:
        iowait_pct = _share_pct(machine[state.iowait_index], _total_s(machine, fields))
    per_cpu_pct: list[float | None] = [_busy_pct(delta, fields) for delta in deltas]
    return _busy_pct(machine, fields), per_cpu_pct, iowait_pct


def _steal_pct(previous: HostState | None, state: HostState, fields: list[str]) -> float | None:
    """The machine's steal time since the previous sample, % of all its CPU time."""
    if previous is None or "steal" not in fields or len(previous.cpu_times) != len(state.cpu_times):
        return None
    index = fields.index("steal")
    delta = [
        sum(now - before for now, before in zip(column_now, column_old, strict=True))
        for column_now, column_old in zip(
            zip(*state.cpu_times, strict=True), zip(*previous.cpu_times, strict=True), strict=True
        )
    ]
    return _share_pct(delta[index], _total_s(delta, fields))


def _total_s(delta: list[float], fields: list[str]) -> float:
    # guest time is already counted in user time on Linux, as psutil's own cpu_percent assumes.
    guest = sum(delta[fields.index(name)] for name in ("guest", "guest_nice") if name in fields)
    return sum(delta) - guest


def _busy_pct(delta: list[float], fields: list[str]) -> float | None:
    waiting = sum(delta[fields.index(name)] for name in ("idle", "iowait") if name in fields)
    total_s = _total_s(delta, fields)
    return _share_pct(total_s - waiting, total_s)


def _share_pct(part: float, total: float) -> float | None:
    if total <= 0:
        return None
    return round(max(0.0, min(100.0, 100.0 * part / total)), 1)


def _disk_counters() -> _Io | None:
    counters = psutil.disk_io_counters()
    return None if counters is None else _Io(counters.read_bytes, counters.write_bytes)


def _net_counters() -> _Io | None:
    counters = psutil.net_io_counters()
    return None if counters is None else _Io(counters.bytes_recv, counters.bytes_sent)


def _io_rates(
    old: _Io | None, new: _Io | None, elapsed_s: float | None
) -> tuple[float | None, float | None]:
    if old is None or new is None or elapsed_s is None or elapsed_s <= 0:
        return None, None
    return _rate(old[0], new[0], elapsed_s), _rate(old[1], new[1], elapsed_s)


def _rate(old: int, new: int, elapsed_s: float) -> float | None:
    # counters can wrap or reset (a disk removed): a negative rate is not a measurement.
    return round((new - old) / elapsed_s, 1) if new >= old else None


def _processes(
    root_pid: int, previous: HostState | None, state: HostState, elapsed_s: float | None
) -> list[HostProcess]:
    cached = previous.processes if previous is not None else {}
    old_io = previous.process_io if previous is not None else {}
    old_waits = previous.waits_ns if previous is not None else {}
    rows = []
    for member in job_tree(root_pid):
        process, known = _cached(member, cached)
        row = _process_row(
            member,
            process,
            known,
            (old_io.get(member.pid), old_waits.get(member.pid)),
            state,
            elapsed_s,
        )
        if row is not None:
            state.processes[member.pid] = process
            rows.append(row)
    return rows


def _cached(member: JobProcess, cached: dict[int, psutil.Process]) -> tuple[psutil.Process, bool]:
    """The Process object seen last time for this pid, unless the pid was reused since."""
    old = cached.get(member.pid)
    if old is not None and old == member.process:
        return old, True
    return member.process, False


def _process_row(
    member: JobProcess,
    process: psutil.Process,
    known: bool,
    old: tuple[_Io | None, dict[int, int] | None],
    state: HostState,
    elapsed_s: float | None,
) -> HostProcess | None:
    old_io, old_waits = old
    try:
        with process.oneshot():
            # A Process's first cpu_percent() call only starts its clock: 0.0 means nothing.
            cpu_pct = process.cpu_percent(interval=None)
            memory = process.memory_info()
            row = HostProcess(
                pid=member.pid,
                ppid=member.ppid,
                name=process.name(),
                role=member.role,
                cpu_pct=round(cpu_pct, 1) if known else None,
                rss_bytes=int(memory.rss),
                threads=int(process.num_threads()),
                vm_bytes=int(memory.vms),  # statm's size: /proc/PID/status's VmSize
                as_limit_bytes=_address_limit(process),
            )
            io = _process_io(process)
    except psutil.NoSuchProcess:
        return None
    if io is not None:
        state.process_io[member.pid] = io
    waits = state.waits_ns[member.pid] = thread_waits_ns(member.pid)
    read_rate, write_rate = _io_rates(old_io if known else None, io, elapsed_s)
    return msgspec.structs.replace(
        row,
        read_bytes_per_s=read_rate,
        write_bytes_per_s=write_rate,
        runqueue_wait_pct=wait_pct(old_waits if known else None, waits, elapsed_s),
    )


def _address_limit(process: psutil.Process) -> int | msgspec.UnsetType | None:
    """The process's soft RLIMIT_AS (prlimit), None where unlimited; unset where unreadable."""
    try:
        soft, _ = process.rlimit(psutil.RLIMIT_AS)
    except (psutil.AccessDenied, AttributeError, OSError):
        return msgspec.UNSET
    return None if soft == psutil.RLIM_INFINITY else int(soft)


def _process_io(process: psutil.Process) -> _Io | None:
    try:
        counters = process.io_counters()
    except (psutil.AccessDenied, AttributeError, NotImplementedError):
        return None
    return _Io(counters.read_bytes, counters.write_bytes)
