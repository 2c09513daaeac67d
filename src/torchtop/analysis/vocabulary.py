"""What event names mean: data loading, collectives, copies, synchronisation, Tensor Cores.

Predicates run once per distinct name (a trace has thousands of names, millions of events), and
`codes_where` turns a predicate into the set of name codes for vectorised masks.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import numpy as np
import numpy.typing as npt

COLLECTIVE_PREFIXES = ("nccl:", "gloo:", "mpi:", "ucc:", "rccl:")
COMM_KERNEL_MARKERS = ("nccl", "rccl")
# On a CPU-only job the collective is host work, so its c10d entry points count as communication.
CPU_COLLECTIVE_NAMES = frozenset(
    {
        "record_param_comms",
        "c10d::allreduce_",
        "c10d::allgather_",
        "c10d::_allgather_base_",
        "c10d::reduce_scatter_",
        "c10d::_reduce_scatter_base_",
        "c10d::broadcast_",
        "c10d::reduce_",
        "c10d::alltoall_",
        "c10d::alltoall_base_",
        "c10d::barrier",
        "c10d::wait",
    }
)
# The host ranges torch-tb-profiler counts as communication (its NcclOpNameSet and GlooOpNameSet);
# kernels sharing their external id are its communication kernels.
TB_PLUGIN_COLLECTIVE_NAMES = frozenset(
    f"{library}:{kind}"
    for library in ("nccl", "gloo")
    for kind in ("broadcast", "reduce", "all_reduce", "all_gather", "reduce_scatter")
)
COPY_OP_NAMES = frozenset(
    {"aten::copy_", "aten::to", "aten::_to_copy", "aten::contiguous", "aten::clone"}
)
SYNC_RUNTIME_NAMES = frozenset(
    {
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaEventSynchronize",
        "cudaStreamWaitEvent",
        "hipStreamSynchronize",
        "hipDeviceSynchronize",
        "hipEventSynchronize",
    }
)
SYNC_OP_NAMES = frozenset({"aten::item", "aten::_local_scalar_dense"})

# Kernel-name fragments of Tensor Core kernels (NVIDIA PyProf's list, as torch-tb-profiler used),
# plus the Hopper/Ampere CUTLASS and cuBLASLt spellings.
TENSOR_CORE_KERNEL_MARKERS = (
    "h884", "s884", "h1688", "s1688", "hmma", "i8816", "16816", "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel", "conv1x1", "conv2d_c1_k1", "direct_group", "xmma_implicit_gemm",
    "xmma_sparse_conv", "xmma_warp_specialized_implicit_gemm", "xmma_gemm", "xmma_sparse_gemm",
    "c1688", "sm80_xmma", "sm90_xmma", "wgmma", "tensorop", "cutlass_80", "cutlass_90",
    "gemm_bf16", "gemm_f16", "ampere_fp16", "ampere_bf16", "hopper",
)  # fmt: skip
# Operators whose kernels could use Tensor Cores under autocast (PyTorch's autocast fp16 list).
TENSOR_CORE_ELIGIBLE_OPS = frozenset(
    {
        "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_tbc",
        "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d",
        "aten::convolution", "aten::cudnn_convolution", "aten::cudnn_convolution_transpose",
        "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul", "aten::mm",
        "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm",
        "aten::chain_matmul", "aten::linalg_multi_dot", "aten::_thnn_fused_lstm_cell",
        "aten::_thnn_fused_gru_cell", "aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell",
        "aten::rnn_relu_cell", "CudnnConvolutionBackward", "BmmBackward0",
        "aten::cudnn_convolution_transpose_backward", "CudnnConvolutionTransposeBackward",
        "MmBackward", "aten::cudnn_convolution_backward_weight", "aten::addmm_", "AddmvBackward",
        "MvBackward", "aten::cudnn_convolution_transpose_backward_weight",
        "aten::cudnn_convolution_transpose_backward_input", "AddmmBackward",
        "aten::cudnn_convolution_backward_input", "AddbmmBackward",
        "aten::cudnn_convolution_backward", "aten::convolution_backward", "aten::_scaled_mm",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
    }
)  # fmt: skip


def is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or (
        name.startswith("enumerate(DataPipe)#")
    )


def is_collective_annotation(name: str) -> bool:
    return name.startswith(COLLECTIVE_PREFIXES)


def is_cpu_collective(name: str) -> bool:
    return is_collective_annotation(name) or name in CPU_COLLECTIVE_NAMES


class KernelFamily(msgspec.Struct, frozen=True):
    """Kernels of one library recognised by name (`kernel_families.toml`)."""

    library: str
    pattern: str
    source: str
    examples: list[str]
    kind: str | None = None
    """The collective kind every kernel of the family is (DeepEP's: all_to_all); None: read
    from the name where it says it."""

    @property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.IGNORECASE)


class KernelFamilies(msgspec.Struct, frozen=True):
    matrix_core: list[KernelFamily]
    communication: list[KernelFamily]


FAMILIES_FILE = Path(__file__).with_name("kernel_families.toml")
FAMILIES = msgspec.convert(tomllib.loads(FAMILIES_FILE.read_text("utf-8")), KernelFamilies)
_MATRIX_CORE = [family.regex for family in FAMILIES.matrix_core]
_COMM_KERNEL = [(family.regex, family.kind) for family in FAMILIES.communication]


def comm_family_kind(name: str) -> tuple[bool, str | None]:
    """Whether a kernel is a collective library's, and the kind its family fixes (if any)."""
    for regex, kind in _COMM_KERNEL:
        if regex.search(name):
            return True, kind
    return any(marker in name.lower() for marker in COMM_KERNEL_MARKERS), None


def is_driver_call(name: str) -> bool:
    """A CUDA driver API call (`cuLaunchKernel`, `cuLaunchKernelEx`), not a runtime one (`cuda*`,
    `hip*`): kineto writes them as `cuda_driver` events, which torch-tb-profiler does not count."""
    return len(name) > 2 and name.startswith("cu") and name[2].isupper()


def is_comm_kernel(name: str) -> bool:
    """A collective library's device kernel: NCCL/RCCL by name, and every family of
    `kernel_families.toml` (NVSHMEM, DeepEP, MSCCL++)."""
    return comm_family_kind(name)[0]


def uses_tensor_cores(kernel_name: str) -> bool:
    """A Tensor Core kernel (NVIDIA's names), or an AMD matrix-core (MFMA) one."""
    lowered = kernel_name.lower()
    if any(marker.lower() in lowered for marker in TENSOR_CORE_KERNEL_MARKERS):
        return True
    return any(regex.search(kernel_name) for regex in _MATRIX_CORE)


def codes_where(names: Sequence[str], predicate: Callable[[str], bool]) -> npt.NDArray[np.int64]:
    return np.array([code for code, name in enumerate(names) if predicate(name)], dtype=np.int64)


def mask_names(
    codes: npt.NDArray[np.int64], names: Sequence[str], predicate: Callable[[str], bool]
) -> npt.NDArray[np.bool_]:
    """Which of `codes` name something the predicate accepts."""
    return np.isin(codes, codes_where(names, predicate))


def distinct(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The distinct values, sorted: `np.unique` without its first-call import of `numpy.ma`
    (~15 ms of an `analyze` run's start-up)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def median(values: npt.NDArray[np.float64]) -> float:
    """`np.median` of a 1-d array (nan when empty), without its first-call import of `numpy.ma`."""
    count = len(values)
    if count == 0:
        return float("nan")
    middle = count // 2
    if count % 2:
        return float(np.partition(values, middle)[middle])
    below, above = np.partition(values, (middle - 1, middle))[middle - 1 : middle + 1]
    return (float(below) + float(above)) / 2


def percentile(values: npt.NDArray[np.float64], q: float) -> float:
    """`np.percentile(values, q)` (linear interpolation) of a non-empty 1-d array, without the
    `np.unique` inside it that imports `numpy.ma`. Computed numpy's way, to the last bit."""
    return percentiles(values, (q,))[0]


def percentiles(values: npt.NDArray[np.float64], qs: Sequence[float]) -> list[float]:
    """`percentile` of each of `qs`, from one partition of `values` (a million step times are
    partitioned once a tick, not once per percentile)."""
    count = len(values)
    places = []
    for q in qs:
        virtual = (count - 1) * (q / 100)
        below = min(int(np.floor(virtual)), count - 1)
        places.append((virtual, below, min(below + 1, count - 1)))
    ordered = np.partition(
        values, sorted({i for _, below, above in places for i in (below, above)})
    )
    found = []
    for virtual, below, above in places:
        low, high = float(ordered[below]), float(ordered[above])
        gamma = virtual - below
        step = high - low
        found.append(high - step * (1 - gamma) if gamma >= 0.5 else low + step * gamma)
    return found
