"""Kernel families by name: AMD matrix-core (MFMA) kernels as Tensor Core work, and the
communication kernels of every collective library (kernel_families.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RESNET_NW0, RESNET_NW4, analyze_json
from tests.synthetic import Loop, document, write_json
from torchtop.analysis.comms import kernel_kind
from torchtop.analysis.summary import analyze_trace
from torchtop.analysis.vocabulary import (
    FAMILIES,
    KernelFamily,
    is_comm_kernel,
    uses_tensor_cores,
)
from torchtop.traces import read_trace

MI300_COMPILED = "tracelens/torch_compile_triton/trace.json.gz"
V100_FLOAT32 = (
    RESNET_NW0,
    RESNET_NW4,
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
)
COMPUTE_KERNELS = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
    "triton_poi_fused__unsafe_view_mul_silu_2",
    "attn_fwd",
    "volta_sgemm_128x64_nn",
    "void at::native::batch_norm_backward_kernel<c10::BFloat16, c10::BFloat16, float, int>",
)


@pytest.mark.parametrize("family", FAMILIES.matrix_core, ids=lambda f: f.library)
def test_every_matrix_core_family_matches_its_examples_and_names_its_source(
    family: KernelFamily,
) -> None:
    assert family.source and family.examples
    for name in family.examples:
        assert uses_tensor_cores(name), name
        assert not is_comm_kernel(name), name


@pytest.mark.parametrize("family", FAMILIES.communication, ids=lambda f: f.library)
def test_every_communication_family_matches_its_examples_and_names_its_source(
    family: KernelFamily,
) -> None:
    assert family.source and family.examples
    for name in family.examples:
        assert is_comm_kernel(name), name
        assert kernel_kind(name) is not None


@pytest.mark.parametrize("name", COMPUTE_KERNELS)
def test_ordinary_compute_kernels_belong_to_no_family(name: str) -> None:
    assert not uses_tensor_cores(name)
    assert not is_comm_kernel(name)


def test_deepep_dispatch_and_combine_kernels_are_all_to_all() -> None:
    names = [e for f in FAMILIES.communication if f.library == "DeepEP" for e in f.examples]
    assert {kernel_kind(n) for n in names} == {"all_to_all"}


def test_tensor_cores_unused_is_quiet_on_an_mi300_whose_mfma_kernels_carry_most_kernel_time(
    shared: Path,
) -> None:
    report = analyze_json(shared / MI300_COMPILED)
    metrics = report["metrics"]
    assert metrics["matrix_cores"] is True
    assert metrics["tc_used_share"] >= 0.4  # the hipBLASLt Cijk_..._MI16x16x1_ GEMM: 64%
    assert "tensor-cores-unused" not in {f["rule"] for f in report["findings"]}


@pytest.mark.parametrize("trace", V100_FLOAT32)
def test_tensor_cores_unused_still_fires_on_the_v100_float32_traces(
    shared: Path, trace: str
) -> None:
    report = analyze_json(shared / trace)
    assert report["metrics"]["matrix_cores"] is True
    assert "tensor-cores-unused" in {f["rule"] for f in report["findings"]}


DEEPEP_DISPATCH = "void deep_ep::internode::dispatch<false, 8, 2, 24, 4096>(int4*, float*, int*)"
DEEPEP_COMBINE = "void deep_ep::internode::combine<__nv_bfloat16, 8, 768>(int4*, float*, int*)"


def test_deepep_all_to_all_kernels_count_as_communication_with_their_overlap(
    tmp_path: Path,
) -> None:
    # A MoE step as real traces record it: expert GEMMs, DeepEP dispatch before them and combine
    # after, each a cudaLaunchKernel with its kernel on the device; combine half under a GEMM.
    loop = Loop().step(1, 0, 200)
    loop.launch(0, 5, device_ts=10, device_dur=40, name=DEEPEP_DISPATCH)
    loop.launch(10, 5, device_ts=50, device_dur=60)
    loop.launch(20, 5, device_ts=90, device_dur=40, name=DEEPEP_COMBINE)
    analysis = analyze_trace(read_trace(write_json(tmp_path / "moe.json", document(loop.events))))
    parts = analysis.steps[0].parts_us
    assert parts["communication"] == pytest.approx(40 + 20)  # dispatch, and combine past the GEMM
    assert parts["kernel"] == pytest.approx(60)
    [stat] = analysis.communication
    assert (stat.kind, stat.count) == ("all_to_all", 2)
    assert stat.total_us == pytest.approx(80)
    assert analysis.metrics["comm_overlap_fraction"] == pytest.approx(20 / 80)
