"""FLOPs and bytes of single operator calls (analysis/op_cost.py), worked out by hand: how
bias, batch, broadcasting, convolution geometry, dtype arguments, attention backward and softmax
count, and which dtype a trace's type name stands for."""

from __future__ import annotations

import pytest

from torchtop.analysis.op_cost import dtype_name, op_cost


def test_a_bias_adds_one_flop_per_output_and_a_batch_multiplies() -> None:
    addmm = op_cost(
        "aten::addmm", [[4], [2, 3], [3, 4], [], []], ["c10::BFloat16"] * 3 + ["Scalar"] * 2
    )
    assert addmm is not None and addmm.flops == 48 + 8 and addmm.dtype == "bf16"
    bmm = op_cost("aten::bmm", [[5, 2, 3], [5, 3, 4]], ["c10::Half", "c10::Half"])
    assert bmm is not None and bmm.flops == 5 * 48 and bmm.bytes == 5 * (6 + 12 + 8) * 2


def test_linear_and_matmul_fold_leading_dims_into_rows() -> None:
    linear = op_cost("aten::linear", [[8, 10, 32], [64, 32], [64]], ["float"] * 3)
    assert linear is not None and linear.flops == 2 * 80 * 64 * 32 + 80 * 64
    vector = op_cost("aten::matmul", [[32], [4, 32, 16]], ["float", "float"])
    assert vector is not None and vector.flops == 4 * 2 * 32 * 16


def test_a_strided_convolution_counts_its_output_positions() -> None:
    # 56x56 -> 28x28 with a 3x3 kernel, stride 2, padding 1: 28*28 outputs per channel
    dims = [[10, 64, 56, 56], [128, 64, 3, 3], [], [], [], [], [], [], []]
    types = [
        "float",
        "float",
        "",
        "ScalarList",
        "ScalarList",
        "ScalarList",
        "Scalar",
        "ScalarList",
        "Scalar",
    ]
    concrete = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    cost = op_cost("aten::convolution", dims, types, concrete)
    assert cost is not None and cost.flops == 2 * 10 * 128 * 28 * 28 * 64 * 9
    assert op_cost("aten::convolution", dims, types) is None  # no stride recorded: not modelled


def test_copies_count_the_destination_in_its_own_dtype() -> None:
    to_bf16 = op_cost(
        "aten::_to_copy", [[1000], [], []], ["float", "Scalar", "Scalar"], ["", "15", "0"]
    )
    assert to_bf16 is not None and to_bf16.bytes == 1000 * 4 + 1000 * 2
    out_arg = op_cost("aten::mul", [[100], [], [100]], ["c10::BFloat16", "double", "c10::BFloat16"])
    assert out_arg is not None and out_arg.bytes == 100 * 2 + 8 + 100 * 2  # out= is written only


@pytest.mark.parametrize(
    ("torch_type", "expected"),
    [
        ("c10::BFloat16", "bf16"),
        ("float", "fp32"),
        ("c10::Half", "fp16"),
        ("double", "fp64"),
        ("c10::Float8_e4m3fn", "fp8"),
        ("signed char", "int8"),
        ("long int", None),
        ("Scalar", None),
    ],
)
def test_dtype_names_follow_the_trace_type(torch_type: str, expected: str | None) -> None:
    assert dtype_name(torch_type) == expected


def test_attention_backward_is_two_and_a_half_forwards() -> None:
    q = [2, 8, 512, 64]
    forward = op_cost("aten::_scaled_dot_product_efficient_attention", [q, q, q], ["c10::Half"] * 3)
    backward = op_cost(
        "aten::_scaled_dot_product_efficient_attention_backward",
        [q, q, q, q, [], q, [2, 8, 512]],
        ["c10::Half"] * 4 + [""] + ["c10::Half", "float"],
    )
    assert forward is not None and backward is not None
    assert backward.flops == 2.5 * forward.flops and backward.family == "attention"


def test_softmax_reads_and_writes_each_element_once_and_its_backward_reads_two() -> None:
    dims, types = [[16, 128, 128], [], []], ["c10::BFloat16", "Scalar", "Scalar"]
    forward = op_cost("aten::_softmax", dims, types, ["", "-1", "False"])
    widened = op_cost("aten::_softmax", dims, types, ["", "-1", "True"])
    numel = 16 * 128 * 128
    assert forward is not None and forward.bytes == numel * (2 + 2) and forward.family == "softmax"
    assert widened is not None and widened.bytes == numel * (2 + 4)
    backward = op_cost(
        "aten::_softmax_backward_data",
        [[16, 128, 128], [16, 128, 128], [], []],
        ["c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"],
    )
    assert backward is not None and backward.bytes == numel * 3 * 2
