"""FLOPs and bytes of the compute-bound operators: matrix products, convolutions, attention.

A multiply-add counts two FLOPs. Bytes are every operand read once and the result written once,
at the operands' own element sizes (what a kernel that keeps its tiles on chip moves); partial
sums spilled between passes are not counted. The conventions, their sources, and where they
differ from TraceLens are in `op_cost`'s docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial

from torchtop.analysis.op_cost_table import (
    Args,
    AttentionSpec,
    ConvSpec,
    OpCost,
    Tensor,
    compute_dtype,
)

Model = Callable[[Args], OpCost | None]


def _gemm(
    a: Tensor,
    b: Tensor,
    mnk: tuple[int, int, int],
    batch: int,
    bias: Tensor | None,
    out_itemsize: int,
) -> OpCost:
    """2*M*N*K per product (Dao et al.'s and TraceLens's GEMM.flops_func), plus M*N for a bias
    added to each output (TraceLens counts it for addmm/baddbmm)."""
    m, n, k = mnk
    flops = 2 * m * n * k * batch + (m * n * batch if bias is not None else 0)
    written = m * n * batch * out_itemsize
    read = a.nbytes + b.nbytes + (bias.nbytes if bias is not None else 0)
    return OpCost(float(flops), float(read + written), "gemm", compute_dtype(a))


def _matrix_pair(args: Args, first: int, rank: int) -> tuple[Tensor, Tensor] | None:
    a, b = args.tensor(first), args.tensor(first + 1)
    if a is None or b is None or len(a.shape) != rank or len(b.shape) != rank:
        return None
    return a, b


def product(args: Args, first: int = 0, rank: int = 2, with_bias: bool = False) -> OpCost | None:
    """mm(A[M,K], B[K,N]) at rank 2, bmm(A[B,M,K], B[B,K,N]) at rank 3; with a bias, addmm and
    baddbmm(C, A, B, ...), whose matrices start at `first`."""
    pair = _matrix_pair(args, first, rank)
    if pair is None:
        return None
    a, b = pair
    bias = args.tensor(0) if with_bias else None
    batch = a.shape[0] if rank == 3 else 1
    return _gemm(a, b, (a.shape[-2], b.shape[-1], a.shape[-1]), batch, bias, a.itemsize)


def linear(args: Args) -> OpCost | None:
    """linear(x[..., K], W[N, K], bias[N]?): every leading dim of x is a row of the product."""
    x, w = args.tensor(0), args.tensor(1)
    if x is None or w is None or not x.shape or len(w.shape) != 2:
        return None
    rows = math.prod(x.shape[:-1])
    return _gemm(x, w, (rows, w.shape[0], x.shape[-1]), 1, args.tensor(2), x.itemsize)


def broadcast(shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """NumPy broadcasting of shapes; None where they do not broadcast."""
    rank = max((len(shape) for shape in shapes), default=0)
    result = []
    for axis in range(rank):
        sizes = {
            shape[axis - rank + len(shape)] for shape in shapes if axis - rank + len(shape) >= 0
        }
        sizes.discard(1)
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def matmul(args: Args) -> OpCost | None:
    """torch.matmul's rules: a 1-d operand is a row (left) or column (right) vector; leading
    dims broadcast and each is one more product (PyTorch's torch.matmul documentation)."""
    a, b = args.tensor(0), args.tensor(1)
    if a is None or b is None or not a.shape or not b.shape:
        return None
    a_rows = a.shape if len(a.shape) > 1 else (1, *a.shape)
    b_cols = b.shape if len(b.shape) > 1 else (*b.shape, 1)
    batch_shape = broadcast([a_rows[:-2], b_cols[:-2]])
    if batch_shape is None:
        return None
    mnk = (a_rows[-2], b_cols[-1], a_rows[-1])
    return _gemm(a, b, mnk, math.prod(batch_shape), None, a.itemsize)


def scaled_mm(args: Args) -> OpCost | None:
    """_scaled_mm(A, B, scale_a, scale_b, bias?, scale_result?, out_dtype?, ...): the result has
    out_dtype, else A's dtype (its schema's default)."""
    pair = _matrix_pair(args, 0, 2)
    if pair is None:
        return None
    a, b = pair
    out_itemsize = args.scalar_type_bytes(6) or a.itemsize
    return _gemm(a, b, (a.shape[0], b.shape[1], a.shape[1]), 1, args.tensor(4), out_itemsize)


GEMMS: dict[str, Model] = {
    "aten::mm": product,
    "aten::addmm": partial(product, first=1, with_bias=True),
    "aten::bmm": partial(product, rank=3),
    "aten::baddbmm": partial(product, first=1, rank=3, with_bias=True),
    "aten::matmul": matmul,
    "aten::linear": linear,
    "aten::_scaled_mm": scaled_mm,
}


def _per_axis(values: tuple[int, ...] | None, rank: int, default: int) -> tuple[int, ...] | None:
    """A conv parameter for each spatial axis; one value stands for all (PyTorch's _pair)."""
    if values is None:
        return (default,) * rank
    if len(values) == 1:
        return values * rank
    return values if len(values) == rank else None


def _conv_output(args: Args, spec: ConvSpec, x: Tensor, w: Tensor) -> tuple[int, ...] | None:
    """The output shape (torch.nn.Conv*d / ConvTranspose*d documentation's formulas)."""
    rank = len(x.shape) - 2
    transposed = spec.always_transposed or bool(args.flag(spec.transposed))
    stride = args.ints(spec.stride)
    padding = _per_axis(args.ints(spec.padding), rank, 0)
    dilation = _per_axis(args.ints(spec.dilation), rank, 1)
    extra = _per_axis(args.ints(spec.output_padding), rank, 0) if transposed else (0,) * rank
    groups = args.value(spec.groups)
    if stride is None or not isinstance(groups, int) or rank < 1:
        return None
    stride = _per_axis(stride, rank, 1)
    if stride is None or padding is None or dilation is None or extra is None:
        return None
    spatial = []
    for size, kernel, s, p, d, e in zip(
        x.shape[2:], w.shape[2:], stride, padding, dilation, extra, strict=True
    ):
        reach = d * (kernel - 1)
        spatial.append(
            (size - 1) * s - 2 * p + reach + e + 1
            if transposed
            else (size + 2 * p - reach - 1) // s + 1
        )
    channels = w.shape[1] * groups if transposed else w.shape[0]
    return (x.shape[0], channels, *spatial)


def _conv_macs(x: Tensor, w: Tensor, out: tuple[int, ...], transposed: bool) -> int:
    """Multiply-adds: each output element (each input element, transposed) meets one filter of
    C_in/groups * prod(kernel) weights (torch.utils.flop_counter.conv_flop_count)."""
    return (x.numel if transposed else math.prod(out)) * math.prod(w.shape[1:])


def convolution(args: Args, spec: ConvSpec) -> OpCost | None:
    x, w = args.tensor(spec.input), args.tensor(spec.weight)
    if x is None or w is None or len(x.shape) != len(w.shape) or len(x.shape) < 3:
        return None
    out = _conv_output(args, spec, x, w)
    if out is None:
        return None
    transposed = spec.always_transposed or bool(args.flag(spec.transposed))
    if spec.grad_output is not None:
        return _convolution_backward(args, spec, x, w, transposed)
    bias = args.tensor(spec.bias)
    flops = 2 * _conv_macs(x, w, out, transposed) + (math.prod(out) if bias is not None else 0)
    moved = (
        x.nbytes + w.nbytes + (bias.nbytes if bias is not None else 0) + math.prod(out) * x.itemsize
    )
    return OpCost(float(flops), float(moved), "conv", compute_dtype(x))


def _convolution_backward(
    args: Args, spec: ConvSpec, x: Tensor, w: Tensor, transposed: bool
) -> OpCost | None:
    """grad_input and grad_weight each cost the forward's multiply-adds, and are computed only
    where output_mask asks (torch.utils.flop_counter.conv_backward_flop); grad_bias sums
    grad_output."""
    grad = args.tensor(spec.grad_output)
    if grad is None:
        return None
    want_input, want_weight, want_bias = args.flags(spec.output_mask) or (True, True, False)
    macs = _conv_macs(x, w, grad.shape, transposed)
    flops = 2 * macs * (int(want_input) + int(want_weight)) + (grad.numel if want_bias else 0)
    moved = 0
    if want_input:
        moved += grad.nbytes + w.nbytes + x.nbytes
    if want_weight:
        moved += grad.nbytes + x.nbytes + w.nbytes
    if want_bias:
        moved += grad.nbytes + grad.shape[1] * grad.itemsize
    return OpCost(float(flops), float(moved), "conv", compute_dtype(x))


def _causal_share(n_q: int, n_kv: int) -> float:
    """The share of (query, key) pairs a causal mask keeps: one half for equal lengths (the
    FlashAttention benchmark's convention, which TraceLens follows); otherwise the exact count
    under PyTorch's top-left-aligned mask (row i sees keys 0..i)."""
    if n_q == n_kv:
        return 0.5
    kept = n_q * (n_q + 1) // 2 if n_q <= n_kv else n_kv * (n_kv + 1) // 2 + (n_q - n_kv) * n_kv
    return kept / (n_q * n_kv)


def _heads_tokens(shape: tuple[int, ...], layout: str) -> tuple[int, int] | None:
    """(batch * heads, tokens) of a query/key/value shape."""
    if layout == "bnhd":
        return (shape[0] * shape[2], shape[1]) if len(shape) == 4 else None
    return (math.prod(shape[:-2]), shape[-2]) if len(shape) >= 3 else None


def attention(args: Args, spec: AttentionSpec) -> OpCost | None:
    """Q·Kᵀ and P·V: 2*N_q*N_kv*(d_qk + d_v) FLOPs per batch and query head (FlashAttention's
    benchmark_flash_attention.py, TraceLens SDPA.flops_func); softmax left out, as both do.
    Backward: 2.5x, the two products' gradients (four) plus Q·Kᵀ recomputed (TraceLens
    SDPA.flops_bwd_func with flash_impl; FlashAttention counts the same)."""
    q, k, v = (args.tensor(spec.q + offset) for offset in range(3))
    if q is None or k is None or v is None:
        return None
    q_rows, k_rows = _heads_tokens(q.shape, spec.layout), _heads_tokens(k.shape, spec.layout)
    if q_rows is None or k_rows is None:
        return None
    (heads, n_q), (_, n_kv) = q_rows, k_rows
    flops = 2.0 * heads * n_q * n_kv * (q.shape[-1] + v.shape[-1])
    mask = args.value(spec.causal)
    if mask is True or (isinstance(mask, int) and not isinstance(mask, bool) and mask > 0):
        flops *= _causal_share(n_q, n_kv)
    out_bytes = heads * n_q * v.shape[-1] * q.itemsize
    operands = q.nbytes + k.nbytes + v.nbytes
    if spec.backward:
        # read q, k, v, out and grad_out; write grad_q, grad_k, grad_v
        return OpCost(
            2.5 * flops, float(2 * operands + 2 * out_bytes), "attention", compute_dtype(q)
        )
    return OpCost(flops, float(operands + out_bytes), "attention", compute_dtype(q))
