"""Bytes (and nominal FLOPs) of the memory-bound operators: element-wise, normalizations,
softmax, reductions and copies.

Their time is set by bytes moved, counted as each tensor argument read once plus each result
written once, from element counts and the recorded element sizes. Their FLOPs are nominal counts
per element (noted at each formula): enough to place them far left on a roofline, never their
limit.
"""

from __future__ import annotations

import math

from torchtop.analysis.op_cost_matmul import broadcast
from torchtop.analysis.op_cost_table import (
    TABLE,
    Args,
    NormSpec,
    OpCost,
    ReductionSpec,
    SoftmaxSpec,
    Tensor,
    compute_dtype,
)

_FP32_BYTES = 4  # the mean and rstd norms save are float for half and bfloat16 inputs


def elementwise(args: Args, name: str, arity: int) -> OpCost | None:
    """Reads every tensor operand once and writes one result: in place, into the first operand
    at its own dtype; otherwise at the operands' broadcast shape, in bool for comparisons, else
    in the promoted dtype (TraceLens's BinaryElementwise takes the wider of two tensors).
    A tensor past the schema's `arity` is out=: written, not read. One FLOP per result element
    (TraceLens's count)."""
    out = args.tensor(len(args.dims) - 1) if len(args.dims) > arity else None
    operands = [
        tensor for tensor in (args.tensor(index) for index in range(arity)) if tensor is not None
    ]
    if not operands:
        return None
    read = sum(tensor.nbytes for tensor in operands)
    if name.endswith("_"):
        out_numel, out_itemsize = operands[0].numel, operands[0].itemsize
    else:
        shape = broadcast([tensor.shape for tensor in operands])
        if shape is None:
            return None
        out_numel = math.prod(shape)
        out_itemsize = 1 if name in TABLE.elementwise.bool_result else _promoted_itemsize(operands)
        if out is not None:
            out_itemsize = out.itemsize
    written = out_numel * out_itemsize
    return OpCost(
        float(out_numel), float(read + written), "elementwise", compute_dtype(operands[0])
    )


def _promoted_itemsize(operands: list[Tensor]) -> int:
    """The result's element size under PyTorch's type promotion, by size within a category: a
    floating operand outranks integers, and 0-dim tensors count only when all are 0-dim."""
    shaped = [tensor for tensor in operands if tensor.shape] or operands
    floating = [tensor for tensor in shaped if compute_dtype(tensor) not in (None, "int8")]
    return max(tensor.itemsize for tensor in floating or shaped)


def write_only(args: Args) -> OpCost | None:
    """fill_, zero_: every element written, nothing read."""
    out = args.tensor(0)
    if out is None:
        return None
    return OpCost(0.0, float(out.nbytes), "elementwise", compute_dtype(out))


def upsample(args: Args) -> OpCost | None:
    """Reads the input once, writes N x C x output_size; one FLOP per output element."""
    x, size = args.tensor(0), args.ints(1)
    if x is None or size is None or len(x.shape) != len(size) + 2:
        return None
    out_numel = math.prod(x.shape[:2]) * math.prod(size)
    return OpCost(
        float(out_numel), float(x.nbytes + out_numel * x.itemsize), "elementwise", compute_dtype(x)
    )


def copy(args: Args, name: str) -> OpCost | None:
    """copy_(self, src) reads src and writes self; clone/contiguous read and write the tensor;
    to/_to_copy write it in the dtype argument (its c10::ScalarType number), else its own.
    No FLOPs."""
    x = args.tensor(0)
    if x is None:
        return None
    if name == "aten::copy_":
        src = args.tensor(1)
        return (
            None
            if src is None
            else OpCost(0.0, float(x.nbytes + src.nbytes), "copy", compute_dtype(x))
        )
    target = args.tensor(1)  # to(other): the other tensor's dtype
    out_itemsize = args.scalar_type_bytes(1) or args.scalar_type_bytes(2)
    if out_itemsize is None:
        out_itemsize = target.itemsize if target is not None and name == "aten::to" else x.itemsize
    return OpCost(0.0, float(x.nbytes + x.numel * out_itemsize), "copy", compute_dtype(x))


def _norm_groups(args: Args, spec: NormSpec, x: Tensor) -> int:
    """How many statistics (means, rstds) the forward computes."""
    if spec.kind == "batch":
        return x.shape[1] if len(x.shape) > 1 else 1
    if spec.kind == "group":
        groups = args.value(spec.groups)
        return x.shape[0] * groups if isinstance(groups, int) else x.shape[0]
    normalized = args.ints(spec.normalized_shape)
    weight = args.tensor(spec.weight)
    width = math.prod(normalized) if normalized else (weight.numel if weight else x.shape[-1])
    return x.numel // max(width, 1)


def norm(args: Args, spec: NormSpec) -> OpCost | None:
    """Forward: read x and every other tensor argument (weight, bias, running stats), write y in
    x's dtype and the statistics (mean and rstd per normalized group in fp32; rms: rstd only);
    a training batch norm also writes back its running mean and variance. The statistics are per
    row for layer norm, where TraceLens counts six normalized-width tensors instead.
    FLOPs: 5 per element where statistics are computed (sum, subtract, square-sum, scale,
    shift), 2 where a batch norm applies its running statistics."""
    x = args.tensor(spec.input)
    if x is None:
        return None
    if spec.grad is not None:
        return _norm_backward(args, spec, x)
    others = sum(tensor.nbytes for tensor in args.tensors()) - x.nbytes
    training = spec.kind != "batch" or args.flag(spec.training) is True
    moved = 2 * x.nbytes + others
    if training:
        saved = 1 if spec.kind == "rms" else 2
        moved += saved * _norm_groups(args, spec, x) * _FP32_BYTES
        moved += sum(
            t.nbytes for t in (args.tensor(index) for index in spec.running) if t is not None
        )
    flops = (5 if training else 2) * x.numel
    return OpCost(float(flops), float(moved), "norm", compute_dtype(x))


def _norm_backward(args: Args, spec: NormSpec, x: Tensor) -> OpCost | None:
    """Read grad_output, x, the saved statistics and the weight; write grad_input in x's dtype,
    and grad_weight and grad_bias at the weight's size, as output_mask asks. FLOPs: 8 per
    element (TraceLens's batch-norm backward count is 9, its layer/rms ones 8)."""
    grad = args.tensor(spec.grad)
    if grad is None:
        return None
    want_input, want_weight, want_bias = args.flags(spec.output_mask) or (True, True, True)
    weight = args.tensor(spec.weight)
    moved = sum(tensor.nbytes for tensor in args.tensors())
    moved += x.nbytes if want_input else 0
    if weight is not None:
        moved += weight.nbytes * (int(want_weight) + int(want_bias))
    return OpCost(8.0 * x.numel, float(moved), "norm", compute_dtype(x))


def softmax(args: Args, spec: SoftmaxSpec) -> OpCost | None:
    """Forward: read x, write the result (in the dtype argument's type, or float where
    half_to_float is set); 5 FLOPs per element (max, subtract, exp, sum, divide). Backward:
    read grad_output and the forward's output, write grad_input; 3 FLOPs per element
    (multiply, sum, subtract)."""
    x = args.tensor(spec.input)
    if x is None:
        return None
    if spec.grad is not None:
        grad = args.tensor(spec.grad)
        if grad is None:
            return None
        return OpCost(3.0 * x.numel, float(grad.nbytes + 2 * x.nbytes), "softmax", compute_dtype(x))
    out_itemsize = args.scalar_type_bytes(spec.dtype) or x.itemsize
    if args.flag(spec.half_to_float):
        out_itemsize = _FP32_BYTES
    return OpCost(
        5.0 * x.numel, float(x.nbytes + x.numel * out_itemsize), "softmax", compute_dtype(x)
    )


def reduction(args: Args, spec: ReductionSpec, name: str) -> OpCost | None:
    """Read the input, write one element per kept position (dims named by the dim argument are
    reduced; none named: all). One FLOP per input element (TraceLens's Reduce.flops_func).
    max/min of two tensors are element-wise."""
    x = args.tensor(0)
    if x is None:
        return None
    if name in ("aten::max", "aten::min") and args.tensor(1) is not None:
        return elementwise(args, name, arity=2)
    reduced = args.ints(spec.dim)
    rank = len(x.shape)
    if reduced:
        gone = {axis % rank for axis in reduced} if rank else set()
        out_numel = math.prod(size for axis, size in enumerate(x.shape) if axis not in gone)
    else:
        out_numel = 1
    return OpCost(
        float(x.numel), float(x.nbytes + out_numel * x.itemsize), "reduction", compute_dtype(x)
    )
