"""What the FLOP and byte formulas of `op_cost` read: the operator tables of `op_costs.toml`,
the element sizes of tensor types, and one operator's recorded arguments as typed tensors and
values.

A Kineto trace records an operator's arguments as three parallel lists ("Input Dims", "Input
type", "Concrete Inputs"): a shape, a type name and, for non-tensors, the value as text. `Args`
reads them defensively: an argument that is absent, not a tensor or not parseable is None, so a
formula can decline (return None) rather than guess.
"""

from __future__ import annotations

import ast
import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec


@dataclass(frozen=True)
class OpCost:
    """One call's work: FLOPs, bytes read plus written in device memory, the operator family
    ("gemm", "conv", "attention", "elementwise", "norm", "softmax", "reduction", "copy") and the
    compute dtype ("fp32", "bf16", ...; None where the operands' type names none)."""

    flops: float
    bytes: float
    family: str
    dtype: str | None


class ConvSpec(msgspec.Struct, frozen=True):
    names: list[str]
    input: int
    weight: int
    stride: int
    padding: int
    dilation: int
    groups: int
    bias: int | None = None
    transposed: int | None = None
    output_padding: int | None = None
    always_transposed: bool = False
    grad_output: int | None = None
    output_mask: int | None = None


class AttentionSpec(msgspec.Struct, frozen=True):
    names: list[str]
    q: int
    layout: str
    causal: int
    backward: bool = False


class NormSpec(msgspec.Struct, frozen=True):
    names: list[str]
    kind: str
    input: int
    weight: int
    grad: int | None = None
    normalized_shape: int | None = None
    training: int | None = None
    groups: int | None = None
    output_mask: int | None = None
    running: list[int] = []


class SoftmaxSpec(msgspec.Struct, frozen=True):
    names: list[str]
    input: int
    grad: int | None = None
    half_to_float: int | None = None
    dtype: int | None = None


class ReductionSpec(msgspec.Struct, frozen=True):
    names: list[str]
    dim: int


class ElementwiseNames(msgspec.Struct, frozen=True):
    ops: dict[str, int]
    bool_result: dict[str, int]
    write_only: list[str]
    upsample: list[str]


class OpCostTable(msgspec.Struct, frozen=True):
    element_bytes: dict[str, int]
    compute_dtype: dict[str, str]
    scalar_type_bytes: dict[str, int]
    convolution: list[ConvSpec]
    attention: list[AttentionSpec]
    norm: list[NormSpec]
    softmax: list[SoftmaxSpec]
    reduction: list[ReductionSpec]
    elementwise: ElementwiseNames


TABLE_FILE = Path(__file__).with_name("op_costs.toml")
TABLE = msgspec.convert(tomllib.loads(TABLE_FILE.read_text("utf-8")), OpCostTable)


def dtype_name(torch_type: str) -> str | None:
    """The compute dtype a trace's tensor type stands for: "c10::BFloat16" -> "bf16", "float" ->
    "fp32"; None for types no peak is quoted in (integers wider than 8 bits, bool, complex)."""
    return TABLE.compute_dtype.get(torch_type.lower())


def element_bytes(torch_type: object) -> int | None:
    """Bytes per element of a tensor type name; None for non-tensors ("Scalar", "", lists)."""
    if not isinstance(torch_type, str):
        return None
    return TABLE.element_bytes.get(torch_type.lower())


@dataclass(frozen=True)
class Tensor:
    """A tensor argument: its shape and the size and name of its element type."""

    shape: tuple[int, ...]
    itemsize: int
    type_name: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.itemsize


def _int_shape(dims: object) -> tuple[int, ...] | None:
    if not isinstance(dims, list | tuple):
        return None
    if not all(isinstance(size, int) and not isinstance(size, bool) for size in dims):
        return None
    return tuple(dims)


def literal(value: object) -> object:
    """A concrete input as a Python value: '[1, 1]' -> [1, 1], 'True' -> True, '0.' -> 0.0; text
    that is no literal, and '', are None. Values already decoded pass through."""
    if not isinstance(value, str):
        return value
    try:
        return ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


@dataclass(frozen=True)
class Args:
    """One operator call's recorded arguments, by position."""

    dims: Sequence[object]
    types: Sequence[object]
    concrete: Sequence[object]

    def tensor(self, index: int | None) -> Tensor | None:
        """The tensor at `index`, or None where that argument is missing or not a tensor."""
        if index is None or index >= len(self.dims) or index >= len(self.types):
            return None
        itemsize = element_bytes(self.types[index])
        shape = _int_shape(self.dims[index])
        if itemsize is None or shape is None:
            return None
        return Tensor(shape, itemsize, str(self.types[index]))

    def tensors(self) -> list[Tensor]:
        found = (self.tensor(index) for index in range(len(self.dims)))
        return [tensor for tensor in found if tensor is not None]

    def value(self, index: int | None) -> object:
        if index is None or index >= len(self.concrete):
            return None
        return literal(self.concrete[index])

    def ints(self, index: int | None) -> tuple[int, ...] | None:
        """A list-of-ints argument ('[2, 2]'); a lone int reads as a one-element list."""
        found = self.value(index)
        if isinstance(found, int) and not isinstance(found, bool):
            return (found,)
        return _int_shape(found)

    def flag(self, index: int | None) -> bool | None:
        found = self.value(index)
        return found if isinstance(found, bool) else None

    def flags(self, index: int | None) -> tuple[bool, ...] | None:
        found = self.value(index)
        if isinstance(found, list) and all(isinstance(item, bool) for item in found):
            return tuple(found)
        return None

    def scalar_type_bytes(self, index: int | None) -> int | None:
        """The element size of a dtype argument, printed as its c10::ScalarType number."""
        found = self.value(index)
        if not isinstance(found, int) or isinstance(found, bool):
            return None
        return TABLE.scalar_type_bytes.get(str(found))


def compute_dtype(tensor: Tensor) -> str | None:
    return dtype_name(tensor.type_name)
