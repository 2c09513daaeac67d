"""Every record of the run folder, as msgspec Structs: the one schema writers and readers share.

Journal records (the `.jsonl` files) are tagged on `kind`, so one `Decoder` turns a line into
the right Struct; `run.json` and `exit.json` are whole documents (`RunRecord`, `ExitRecord`):
`run.json`'s `kind` names the run's kind (`run`, `demo`, `attach`, `tune`), not a record type,
so it is no member of the tagged union. Field order is the order the writers wrote before these
Structs existed, so the files read the same, byte for byte where nothing was missing. A fix and
the figures a revert was made on are the report's own shapes (`model.trial_entry.FixEntry`,
`SinceRelaunch`), so the run folder and the report cannot drift apart.

`runs.codec` encodes and decodes them; docs/run-folder.md lists every record and field here
(its schema section is generated from these Structs by `runs.schema_doc`, and a test holds the
two together).
"""

from __future__ import annotations

import msgspec

# run.json's tables, re-exported so the schema lists them beside the records.
from torchtop.model.attach import AttachedRank as AttachedRank
from torchtop.model.attach import AttachTarget as AttachTarget
from torchtop.model.trial_entry import FixEntry, SinceRelaunch
from torchtop.runs.layout import RUN_SCHEMA

Scalar = str | int | float | bool | None
"""A knob's value (an override, a fix's value): what a command line or variable can carry."""
Number = int | float
"""A counter as the collector read it: kept as written (NVML and psutil give ints for counts
and bytes, floats for rates), so a record read and written again is the same JSON."""


class Part(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A table inside a record (a DataLoader's settings, a GPU device, a stack frame)."""


class JournalRecord(msgspec.Struct, tag_field="kind", forbid_unknown_fields=True, kw_only=True):
    """One line of a `.jsonl` file; `kind` names the Struct."""


# events/agent-<pid>.jsonl: written by the agent inside each training process.


class Hello(JournalRecord, tag="hello"):
    t: float
    pid: int | None = None
    ppid: int | None = None
    rank: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    argv: list[str] | None = None
    local_world_size: int | msgspec.UnsetType | None = msgspec.UNSET
    """`LOCAL_WORLD_SIZE` (torchrun sets it): the job's ranks on this node; absent in folders
    written before it existed."""
    python: str | None = None
    torch: str | None = None
    host: str | None = None
    rank_from: str | msgspec.UnsetType = msgspec.UNSET
    """`torch.distributed` on the `hello` an agent writes again, with the same `t`, once the
    job's default process group is up: its rank and world size as the job knows them, for any
    launcher (`mp.spawn` passes the rank as an argument, not in `RANK`). Absent: the
    environment's (`RANK`, `WORLD_SIZE`)."""


class LoaderSettings(Part):
    num_workers: int | None = None
    pin_memory: bool | None = None
    batch_size: int | None = None
    persistent_workers: bool | None = None
    prefetch_factor: int | None = None


class ThreadSettings(Part):
    torch_num_threads: int | None = None
    torch_interop_threads: int | None = None
    omp_num_threads_env: str | None = None
    openmp_runtime: str | None = None
    usable_cores: int | None = None
    """The CPUs the process may run on as it was started (its affinity before torch's OpenMP
    pinned its main thread), or the union of its threads' affinities where it was not seen then."""
    omp_proc_bind_env: str | msgspec.UnsetType | None = msgspec.UNSET


class DdpSettings(Part):
    """What `DistributedDataParallel(...)` was built with, from its own logging data."""

    gradient_bytes: int | None = None
    """The parameters it reduces (`total_parameter_size_bytes`): the bytes all-reduced a step."""
    bucket_cap_bytes: int | None = None
    bucket_count: int | None = None
    """Its buckets, as it counts them (`num_buckets_reduced`) once they are rebuilt after the
    first step (a job of one rank keeps its first layout); None before then."""
    where: str | None = None
    """The user's line that called it: `file:line: source`."""


class CliOption(Part):
    """An option of the script's argparse parser. `default` and `value` are whatever the parser
    holds (any JSON value; what JSON cannot hold is written as its `str`)."""

    flags: list[str] = []
    dest: str = ""
    type: str | None = None
    default: object = None
    value: object = None


class Settings(JournalRecord, tag="settings"):
    dataloader: LoaderSettings | None = None
    threads: ThreadSettings | None = None
    device: str | None = None
    amp: bool | None = None
    compiled: bool | None = None
    cli_options: list[CliOption] = []
    overrides: dict[str, Scalar] = {}
    step_signal: str | None = None
    step_signal_held: str | None = None
    t: float | None = None
    ddp: DdpSettings | msgspec.UnsetType | None = msgspec.UNSET
    """Absent in folders written before it existed."""


class Step(JournalRecord, tag="step"):
    step: int
    wall_s: float | None
    data_wait_s: float | None = None
    h2d_s: float | None = None
    sync_s: float | None = None
    t: float = 0.0
    backward_s: float | msgspec.UnsetType = msgspec.UNSET
    """Time inside `backward()` this step: under DDP it holds the wait for the other ranks'
    gradients, so the rank that waits least is the one the others wait on. Absent where the
    step had no backward (and in folders written before it existed)."""
    data_cpu_s: float | msgspec.UnsetType = msgspec.UNSET
    """The stepping thread's CPU time inside `DataLoader.__next__` this step
    (`time.thread_time`): with `num_workers=0`, the loading's CPU work; the rest of
    `data_wait_s` waited on storage or the network (or, with workers, on them). Absent where
    no batch was waited for (and in folders written before it existed)."""
    rss_bytes: int | msgspec.UnsetType = msgspec.UNSET
    """The process's resident set at the step's end (`/proc/self/statm`); absent where not
    read (not Linux, a step released late, a step ended under 50 ms after the last reading,
    folders written before it existed)."""
    cuda_device: int | msgspec.UnsetType = msgspec.UNSET
    """The CUDA device the figures below are of; these are absent where the job did not use
    CUDA (never 0 for a CPU job)."""
    cuda_peak_allocated_bytes: int | msgspec.UnsetType = msgspec.UNSET
    """The caching allocator's peak since the previous reading (`torch.cuda.max_memory_allocated`,
    reset when read): the step's own where steps take over 50 ms."""
    cuda_allocated_bytes: int | msgspec.UnsetType = msgspec.UNSET
    """Allocated at the step's end (`torch.cuda.memory_allocated`)."""
    cuda_reserved_bytes: int | msgspec.UnsetType = msgspec.UNSET
    """Reserved at the step's end (`torch.cuda.memory_reserved`)."""
    cuda_capacity_bytes: int | msgspec.UnsetType = msgspec.UNSET
    """The device's memory (`get_device_properties(i).total_memory`): written with the
    device's first step only."""


class Window(JournalRecord, tag="window"):
    t: float
    path: str
    first_step: int | None = None
    last_step: int | None = None


class Note(JournalRecord, tag="note"):
    """Something to show the user once; the agent and the launcher's samplers write them."""

    t: float
    message: str = ""


class Bye(JournalRecord, tag="bye"):
    t: float
    reason: str | None = None
    exit_code: int | msgspec.UnsetType = msgspec.UNSET
    """The interpreter's exit status as the agent saw it (`sys.exit`'s code, 1 for an uncaught
    exception, 0 otherwise); absent where it was not recorded."""
    signal: str | msgspec.UnsetType = msgspec.UNSET
    """The signal that ended the process (`SIGINT` for an uncaught KeyboardInterrupt)."""
    error: list[str] | msgspec.UnsetType = msgspec.UNSET
    """The uncaught exception that ended it, as Python printed it to stderr (its last
    `agent.agent.ERROR_LINES` lines): a rank's own error, which its launcher's stderr buries."""


class ModuleTiming(Part):
    """One `nn.Module`, by its path from the outermost module called (`Sequential_0/Linear_1`),
    over a module timing period (`agent.module_timer`)."""

    path: str
    calls: int
    forward_s: float
    """The summed wall time of its forward calls on the stepping thread (`perf_counter` from
    its forward pre hook to its forward hook), the modules called inside included."""
    forward_self_s: float
    """The same without the modules called inside it."""


class ModulesStarted(JournalRecord, tag="modules_started"):
    """The agent installed its module hooks (`RUN/requests/modules`) before step `first_step`,
    for `steps` steps."""

    t: float
    first_step: int
    steps: int


class ModuleTimes(JournalRecord, tag="module_times"):
    """What a module timing period measured, its hooks removed: per module, sums over `steps`
    steps (fewer than asked where the process ended first)."""

    t: float
    first_step: int
    last_step: int
    steps: int
    wall_s: float | None = None
    """The timed steps' summed wall time, as their `step` records give it."""
    clock: str = "host"
    """`host`: wall time on the CPU; on a CUDA device, the forward's launch time, not its
    kernels'."""
    device: str | None = None
    """`cpu` or `cuda:N`, as `settings` says."""
    modules: list[ModuleTiming] = []


AgentRecord = Hello | Settings | Step | Window | Note | Bye | ModulesStarted | ModuleTimes


# samples/<source>.jsonl: written by the launcher's collectors.


class HostProcess(Part):
    pid: int
    ppid: int | None = None
    name: str | None = None
    role: str | None = None
    cpu_pct: Number | None = None
    rss_bytes: Number | None = None
    threads: int | None = None
    read_bytes_per_s: Number | None = None
    write_bytes_per_s: Number | None = None
    runqueue_wait_pct: Number | msgspec.UnsetType | None = msgspec.UNSET
    """Time its threads waited on a CPU run queue (ready to run, no core free) since the
    previous sample, % of one core (`/proc/PID/task/*/schedstat`, 2nd field); a process of the
    job's tree only (absent in folders written before it existed)."""
    command: str | msgspec.UnsetType = msgspec.UNSET
    """Its command line, cut short: a process outside the job's tree (`others`) only."""
    vm_bytes: int | msgspec.UnsetType = msgspec.UNSET
    """Its address space (`VmSize` of /proc/PID/status), which RLIMIT_AS bounds: a growing
    process dies when this, not its resident set, meets the limit. A process of the job's tree
    only (absent in folders written before it existed)."""
    as_limit_bytes: int | msgspec.UnsetType | None = msgspec.UNSET
    """Its own RLIMIT_AS (soft), the job's limit whether inherited or set by the job itself;
    None where unlimited. A process of the job's tree only (absent where unreadable)."""


class HostSample(JournalRecord, tag="host"):
    t: float
    cpu_pct: Number | None = None
    per_cpu_pct: list[Number | None] | None = None
    iowait_pct: Number | None = None
    mem_used_bytes: Number | None = None
    mem_total_bytes: Number | None = None
    disk_read_bytes_per_s: Number | None = None
    disk_write_bytes_per_s: Number | None = None
    net_recv_bytes_per_s: Number | None = None
    net_sent_bytes_per_s: Number | None = None
    processes: list[HostProcess] = []
    # The machine's other tenants: absent in folders written before they were sampled.
    steal_pct: Number | msgspec.UnsetType | None = msgspec.UNSET
    """Time the hypervisor gave this machine's CPUs to other guests (steal), % of all CPU time."""
    others_cpu_pct: Number | msgspec.UnsetType | None = msgspec.UNSET
    """CPU of every process outside the job's tree and torchtop's own, summed, % of one core."""
    others: list[HostProcess] | msgspec.UnsetType = msgspec.UNSET
    """The busiest of those processes (each above 5% of a core), busiest first."""


class GpuDevice(Part):
    index: int
    name: str | None = None
    uuid: str | None = None
    utilization_gpu_pct: Number | None = None
    utilization_memory_pct: Number | None = None
    sm_clock_mhz: Number | None = None
    mem_clock_mhz: Number | None = None
    memory_used_bytes: Number | None = None
    memory_total_bytes: Number | None = None
    power_w: Number | None = None
    power_limit_w: Number | None = None
    temperature_c: Number | None = None
    pcie_tx_bytes_per_s: Number | None = None
    pcie_rx_bytes_per_s: Number | None = None
    throttle_reasons: list[str] | None = None


class GpuProcess(Part):
    pid: int
    device_index: int | None = None
    memory_used_bytes: Number | None = None
    sm_util_pct: Number | None = None


class GpuSample(JournalRecord, tag="gpu"):
    t: float
    devices: list[GpuDevice] = []
    processes: list[GpuProcess] = []


class StackFrame(Part):
    function: str | None = None
    file: str | None = None
    line: int | None = None


class NativeFrame(Part):
    """A frame of compiled code (libtorch, gloo, libgomp, libc) under a Python frame."""

    function: str
    """The symbol py-spy resolved (cut to `NATIVE_NAME_CHARS`), or the bare address."""
    library: str | None = None
    """The shared object's file name (`libtorch_cpu.so`)."""


NATIVE_NAME_CHARS = 200
"""Longer symbols (a kernel functor's template arguments run to 1,000 characters) are cut:
the frame patterns match their start, and every dump is written once a second."""


class StackThread(Part):
    tid: int | None = None
    name: str | None = None
    active: bool | None = None
    frames: list[StackFrame] = []
    """Innermost first."""
    native: list[NativeFrame] | msgspec.UnsetType = msgspec.UNSET
    """The compiled frames of the same stack, innermost first (only from a native dump)."""


class TaskTime(Part):
    """One OS thread of a process (every thread, Python or not), from /proc/PID/task."""

    tid: int
    name: str
    cpu_s: float
    """User and system CPU time the thread has used since it started."""


class SamplerPace(Part):
    """One native chunk's own pace and cost: its length, its samples a second, and the CPU
    seconds py-spy spent on it (user and system), against the budget it aims under."""

    chunk_s: int
    rate_per_s: int
    cpu_s: float
    budget_share: float


class StackProcess(Part):
    pid: int
    role: str | None = None
    threads: list[StackThread] = []
    tasks: list[TaskTime] | msgspec.UnsetType = msgspec.UNSET
    """All the process's OS threads (where /proc could be read): the OpenMP, gloo and autograd
    threads py-spy cannot show, by name and CPU time, as the samples of this record ended."""
    tasks_start: list[TaskTime] | msgspec.UnsetType = msgspec.UNSET
    """The same as this record's samples began (a native chunk): CPU used between the two."""
    sampler: SamplerPace | msgspec.UnsetType = msgspec.UNSET
    """What the native chunk of this record cost the sampler (`collectors.pace`)."""


class Unreadable(Part):
    """A process py-spy gave up on, and why."""

    pid: int
    reason: str


class StacksSample(JournalRecord, tag="stacks"):
    t: float
    processes: list[StackProcess] = []
    unreadable: list[Unreadable] | msgspec.UnsetType = msgspec.UNSET
    """The processes given up on since the last record (only when there are some)."""
    native: bool | msgspec.UnsetType = msgspec.UNSET
    """True for a `py-spy dump --native` (`torchtop attach`): threads carry their compiled
    frames and processes their OS threads."""
    python_only: str | msgspec.UnsetType = msgspec.UNSET
    """Why this dump has no native frames, where native dumps were tried and failed."""


class Unavailable(JournalRecord, tag="unavailable"):
    """A collector that cannot measure this run says why, once, and writes nothing more."""

    t: float
    reason: str = "not measured"


class RanksSeen(JournalRecord, tag="ranks"):
    """`samples/ranks.jsonl` (`attach` to a job of several ranks, no agent inside): the job's
    ranks as its launcher's tree shows them now, written each time one changes: a rank number
    under a new pid (its launcher restarted it) or a number not seen before (a rank that
    joined). `run.json`'s `attached` holds the ranks found when attach started."""

    t: float
    ranks: list[AttachedRank] = []
    """Every rank known so far, each under its newest pid (a rank that ended keeps its own)."""


SampleRecord = HostSample | GpuSample | StacksSample | RanksSeen | Unavailable | Note


# reverts.jsonl: one record per fix the user took back from the dashboard.


class Revert(JournalRecord, tag="revert"):
    t: float
    at: str
    trial: int
    fixes: list[FixEntry] = []
    from_run_dir: str | None = None
    run_dir: str | None = None
    command: list[str] = []
    since_relaunch: SinceRelaunch | None = None


Record = AgentRecord | SampleRecord | Revert
RECORD_TYPES: tuple[type[JournalRecord], ...] = (
    Hello,
    Settings,
    Step,
    Window,
    Note,
    Bye,
    ModulesStarted,
    ModuleTimes,
    HostSample,
    GpuSample,
    StacksSample,
    RanksSeen,
    Unavailable,
    Revert,
)


# run.json and exit.json: whole documents, written once, atomically.


class RunRecord(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`run.json`: the launch. `overrides` and `fixes` only where the launch applied fixes."""

    schema: str = RUN_SCHEMA
    kind: str | None = None
    """`run`, `demo`, `attach` or `tune`: how the job came to be watched."""
    command: list[str] = []
    cwd: str | None = None
    pid: int | None = None
    started_at: float | None = None
    host: str | None = None
    cpu_count: int | None = None
    torchtop: str | None = None
    overrides: dict[str, Scalar] | msgspec.UnsetType = msgspec.UNSET
    fixes: list[FixEntry] | msgspec.UnsetType = msgspec.UNSET
    node: str | msgspec.UnsetType = msgspec.UNSET
    """The node's name, where its launcher shares the run folder with others' (`nodes/<node>/`)."""
    slurm_job_id: str | msgspec.UnsetType = msgspec.UNSET
    slurm_node_id: int | msgspec.UnsetType = msgspec.UNSET
    slurm_proc_id: int | msgspec.UnsetType = msgspec.UNSET
    slurm_job_nodelist: str | msgspec.UnsetType = msgspec.UNSET
    attached: AttachTarget | msgspec.UnsetType = msgspec.UNSET
    """`attach` to a job of several ranks: the pid given, its launcher and the ranks found."""
    env: dict[str, str] | msgspec.UnsetType = msgspec.UNSET
    """The job's environment variables that bear on its speed (`runs.environment`: OpenMP,
    BLAS, CUDA, NCCL, PyTorch's; no secrets, none of torchtop's own), for `diff`; absent where
    attach could not read the process's, and in folders written before it existed."""


class ExitRecord(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`exit.json`: how the job ended. `duration_s` where torchtop started the job."""

    kind: str = "exit"
    ended_at: float | None = None
    how: str | None = None
    """`exited`, `crashed`, `killed`, `stopped` (by torchtop, after `--for`), `detached`."""
    exit_status: int | None = None
    signal: str | None = None
    duration_s: float | msgspec.UnsetType = msgspec.UNSET
    stderr_tail: list[str] | msgspec.UnsetType = msgspec.UNSET
    """The last lines the job wrote to stderr (a crash's traceback), where torchtop kept them."""
    log: str | msgspec.UnsetType = msgspec.UNSET
    """The file that holds the job's whole output (or its stderr, where stdout went to the
    terminal)."""


Document = RunRecord | ExitRecord
