"""FLOPs and bytes moved by one operator call, from the shapes, types and concrete arguments a
Kineto trace records for it (`record_shapes=True`): what a roofline and MFU are computed from.

Counting conventions (each formula's docstring names its source):

- A multiply-add is two FLOPs. GEMMs: 2*M*N*K per product, times the batch; a bias adds M*N
  (addmm, baddbmm, linear, _scaled_mm with a bias). Convolutions: 2 * output elements *
  C_in/groups * kernel size (input elements for transposed ones), plus one per output for a
  bias; backward: the same per gradient output_mask asks for (torch.utils.flop_counter).
  Attention: 2*N_q*N_kv*(d_qk + d_v) per batch and query head, halved when causal with equal
  lengths; backward 2.5x (FlashAttention's benchmark, TraceLens's SDPA model).
- Bytes are device-memory traffic with perfect on-chip reuse: each tensor argument read once and
  each result written once, element counts times the recorded element sizes. Scalars cost none.
- Memory-bound operators (element-wise, norms, softmax, reductions, copies) carry nominal FLOPs
  per element; their bytes are what matters.
- The compute dtype is the first matrix operand's (`dtype_name`); whether fp32 ran as TF32 is not
  in the trace, so fp32 stays fp32 here.

Where torchtop counts otherwise than TraceLens's perf model (AMD-AGI/TraceLens
`TraceLens/PerfModel/perf_model.py`), on purpose: a convolution backward counts only the
gradients its output_mask asks for (TraceLens always counts grad_input and grad_weight); an
in-place element-wise op writes in its own dtype (TraceLens promotes the result to the wider
operand); layer norm saves one mean and rstd per row (TraceLens counts six tensors of the
normalized width); a reduction writes one element per kept position (TraceLens writes one element,
as it reads no dims from the trace's text); a convolution's bias counts (TraceLens's
aten::convolution never sees one). tests/analysis/test_op_cost.py holds each of these against
TraceLens's numbers on real traces.

Nested operators are each modelled (aten::linear and the aten::addmm it calls, aten::convolution
and aten::cudnn_convolution): whoever sums them must count one level of a call stack only.
An operator whose arguments were not recorded (traces without "Concrete Inputs" lack a
convolution's stride) or whose name is not here gives None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from torchtop.analysis import op_cost_matmul as matmul
from torchtop.analysis import op_cost_memory as memory
from torchtop.analysis.op_cost_table import TABLE, Args, OpCost, dtype_name

__all__ = ["OpCost", "dtype_name", "modelled_operators", "op_cost"]

_Model = Callable[[Args], OpCost | None]

_COPIES = ("aten::copy_", "aten::clone", "aten::contiguous", "aten::to", "aten::_to_copy")


def _models() -> dict[str, _Model]:
    models: dict[str, _Model] = dict(matmul.GEMMS)
    for conv in TABLE.convolution:
        models.update(dict.fromkeys(conv.names, partial(matmul.convolution, spec=conv)))
    for attention in TABLE.attention:
        models.update(dict.fromkeys(attention.names, partial(matmul.attention, spec=attention)))
    for norm in TABLE.norm:
        models.update(dict.fromkeys(norm.names, partial(memory.norm, spec=norm)))
    for softmax in TABLE.softmax:
        models.update(dict.fromkeys(softmax.names, partial(memory.softmax, spec=softmax)))
    for reduction in TABLE.reduction:
        for name in reduction.names:
            models[name] = partial(memory.reduction, spec=reduction, name=name)
    names = TABLE.elementwise
    for name, arity in [*names.ops.items(), *names.bool_result.items()]:
        models[name] = partial(memory.elementwise, name=name, arity=arity)
        models[name + "_"] = partial(memory.elementwise, name=name + "_", arity=arity)
    models.update(dict.fromkeys(names.write_only, memory.write_only))
    models.update(dict.fromkeys(names.upsample, memory.upsample))
    for name in _COPIES:
        models[name] = partial(memory.copy, name=name)
    return models


_MODELS = _models()


def modelled_operators() -> frozenset[str]:
    """Every operator name `op_cost` has a formula for."""
    return frozenset(_MODELS)


def op_cost(
    name: str, dims: Sequence[object], types: Sequence[object], concrete: Sequence[object] = ()
) -> OpCost | None:
    """One call's FLOPs and bytes, from the trace's "Input Dims", "Input type" and "Concrete
    Inputs" (decoded JSON lists); None when the operator is not modelled or its recorded
    arguments do not say enough."""
    model = _MODELS.get(name)
    if model is None:
        return None
    try:
        return model(Args(dims, types, concrete))
    except (IndexError, ValueError, ZeroDivisionError):
        # A record whose arguments contradict the schema (shapes that cannot multiply, a
        # zero stride) is not modelled, rather than failing the whole analysis.
        return None
