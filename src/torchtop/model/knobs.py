"""The knob catalogue: every knob a rule may name, what it means and how it can be applied.

A fix in `rules/` names a knob and a value; this table says what kind of value the knob takes
(type and bounds), what it does in one line, whether changing it can change what the model
learns (batch size, numeric precision, learning rate: such knobs are tried only when the user
allows their group), and the routes by which torchtop can apply it:

- `arg`: rewrite a command-line option the script defines (its argparse `dest` is one of
  `arg_dests`, or `torchtop.toml` binds the knob to a flag);
- `override`: the agent changes the library default inside the relaunched process
  (`agent/overrides.py` knows each `override` target);
- `env`: set an environment variable (`env_name`) on relaunch;
- `code`: a change only the user can make, shown as a patch and never applied.

Data only: the planner (`plan.py`) decides which route a fix takes.
"""

from __future__ import annotations

from dataclasses import dataclass

ROUTES = ("arg", "override", "env", "code")
ALLOW_GROUPS = ("batch-size", "precision", "learning-rate")


@dataclass(frozen=True)
class Knob:
    name: str
    type: str
    """`int`, `float`, `bool` or `str`: the type of the value once resolved."""
    meaning: str
    routes: tuple[str, ...]
    """In order of preference; `arg` is taken only where the script exposes the option."""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    allow_group: str | None = None
    """Set for knobs that can change convergence: tried only with `--allow <group>`."""
    env_name: str | None = None
    arg_dests: tuple[str, ...] = ()
    """argparse destinations that mean this knob in a script (`--num-workers` -> num_workers)."""
    needs_gpu: bool = False
    needs_workers: bool = False
    """Only meaningful when the DataLoader uses worker processes."""

    @property
    def changes_convergence(self) -> bool:
        return self.allow_group is not None


def _loader(
    name: str,
    type_: str,
    meaning: str,
    minimum: float | None = None,
    maximum: float | None = None,
    more_dests: tuple[str, ...] = (),
    needs_gpu: bool = False,
    needs_workers: bool = False,
) -> Knob:
    """A DataLoader argument: an option of the script where it has one, else an override."""
    return Knob(
        name,
        type_,
        meaning,
        ("arg", "override"),
        minimum=minimum,
        maximum=maximum,
        arg_dests=(name.split(".", 1)[1], *more_dests),
        needs_gpu=needs_gpu,
        needs_workers=needs_workers,
    )


def _env(
    name: str,
    type_: str,
    meaning: str,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] = (),
    needs_gpu: bool = False,
) -> Knob:
    return Knob(
        name,
        type_,
        meaning,
        ("env",),
        minimum=minimum,
        maximum=maximum,
        choices=choices,
        env_name=name.split(".", 1)[1],
        needs_gpu=needs_gpu,
    )


def _code(name: str, meaning: str, allow_group: str | None = None) -> Knob:
    return Knob(name, "str", meaning, ("code",), allow_group=allow_group)


_KNOBS = (
    _loader(
        "dataloader.num_workers",
        "int",
        "worker processes that load batches while the model runs",
        minimum=0,
        maximum=64,
        more_dests=(
            "workers",
            "num_data_workers",
            "dataloader_workers",
            "loader_workers",
            "n_workers",
            "num_dataloader_workers",
            "dataloader_num_workers",  # Hugging Face TrainingArguments
            "data.num_workers",  # LightningCLI's jsonargparse, a DataModule's init argument
        ),
    ),
    _loader(
        "dataloader.pin_memory",
        "bool",
        "batches in page-locked memory, so host-to-GPU copies are fast and asynchronous",
        needs_gpu=True,
    ),
    _loader(
        "dataloader.persistent_workers",
        "bool",
        "keep worker processes alive between epochs instead of restarting them",
        needs_workers=True,
    ),
    _loader(
        "dataloader.prefetch_factor",
        "int",
        "batches each worker prepares ahead of the loop",
        minimum=1,
        maximum=32,
        needs_workers=True,
    ),
    Knob(
        "torch.backends.cudnn.benchmark",
        "bool",
        "cuDNN times its convolution algorithms once and keeps the fastest for each shape",
        ("override",),
        needs_gpu=True,
    ),
    Knob(
        "torch.float32_matmul_precision",
        "str",
        "float32 matmuls may use TF32 (`high`) or bfloat16 (`medium`) internally",
        ("override",),
        choices=("highest", "high", "medium"),
        allow_group="precision",
    ),
    Knob(
        "torch.backends.cuda.matmul.allow_tf32",
        "bool",
        "float32 matmuls on Ampere and later GPUs run on Tensor Cores in TF32",
        ("override",),
        allow_group="precision",
        needs_gpu=True,
    ),
    Knob(
        "torch.num_threads",
        "int",
        "intra-op threads of the training process (`torch.set_num_threads`)",
        ("override",),
        minimum=1,
        maximum=1024,
    ),
    Knob(
        "optimizer.foreach",
        "bool",
        "the optimizer updates all parameters with a few multi-tensor kernels",
        ("override",),
    ),
    Knob(
        "optimizer.zero_grad_set_to_none",
        "bool",
        "`zero_grad()` frees gradients instead of filling them with zeros",
        ("override",),
    ),
    _env("env.OMP_NUM_THREADS", "int", "OpenMP threads per process", minimum=1, maximum=1024),
    _env("env.MKL_NUM_THREADS", "int", "MKL threads per process", minimum=1, maximum=1024),
    _env("env.KMP_AFFINITY", "str", "Intel OpenMP: how threads are pinned to cores"),
    _env(
        "env.KMP_BLOCKTIME",
        "int",
        "Intel OpenMP: milliseconds a thread spins before it sleeps",
        minimum=0,
        maximum=1_000_000,
    ),
    _env(
        "env.OMP_PROC_BIND",
        "str",
        "OpenMP threads stay on their cores",
        choices=("close", "spread", "master", "primary", "true", "false"),
    ),
    _env(
        "env.LD_PRELOAD",
        "str",
        "load a faster allocator (jemalloc, tcmalloc) or OpenMP runtime (libiomp5) first",
    ),
    _env(
        "env.PYTORCH_CUDA_ALLOC_CONF",
        "str",
        "the CUDA caching allocator's options (e.g. expandable_segments:True)",
        needs_gpu=True,
    ),
    _env("env.CUDA_VISIBLE_DEVICES", "str", "which GPUs the job sees", needs_gpu=True),
    _env("env.NCCL_*", "str", "an NCCL setting (algorithm, protocol, buffer sizes, sockets)"),
    Knob(
        "train.batch_size",
        "int",
        "samples per step (scale the learning rate with it)",
        ("arg",),
        minimum=1,
        maximum=1 << 20,
        allow_group="batch-size",
        arg_dests=(
            "batch_size",
            "batch",
            "bs",
            "train_batch_size",
            "per_device_train_batch_size",
        ),
    ),
    Knob(
        "train.lr",
        "float",
        "the optimizer's learning rate",
        ("arg",),
        minimum=0.0,
        allow_group="learning-rate",
        arg_dests=("lr", "learning_rate"),
    ),
    _code("amp.dtype", "mixed precision: autocast to bfloat16/float16", "precision"),
    _code("ddp.bucket_cap_mb", "DDP gradient bucket size"),
    _code("dist.backend", "torch.distributed backend (nccl for GPUs)"),
    _code("code.*", "a change in the training script"),
)

CATALOGUE: dict[str, Knob] = {k.name: k for k in _KNOBS}


def find_knob(name: str) -> Knob | None:
    """The catalogue entry for `name`; `env.NCCL_X` and `code.x` match their families."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    for family in ("env.NCCL_", "code."):
        if name.startswith(family) and len(name) > len(family):
            return CATALOGUE[family + "*"]
    return None


def env_variable(knob: Knob, name: str) -> str | None:
    """The variable an `env` knob sets (for a family, the name the fix used)."""
    if knob.env_name is None:
        return None
    return name.split(".", 1)[1] if knob.env_name.endswith("*") else knob.env_name
