"""The datasheet peak table (peaks.toml) and how device names find their entry: every entry has a
source and sane dense figures, every real trace's device resolves to the product it ran on, a
broken table is one line naming the file, and an unknown device is None."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from torchtop.analysis.peaks import (
    DTYPES,
    PEAKS_FILE,
    Peak,
    PeakTableError,
    load_peak_table,
    match_device,
    match_device_info,
)
from torchtop.model.trace import DeviceInfo
from torchtop.traces import read_trace

V100_SXM2 = "NVIDIA V100 SXM2"
A100_40 = "NVIDIA A100 SXM4 40GB"
H100_SXM = "NVIDIA H100 SXM5"
MI300X = "AMD Instinct MI300X"
DLRM_STAMPS = (
    1694128201545,
    1694128201556,
    1694128201554,
    1694128201557,
    1694128201547,
    1694128201549,
    1694128201553,
    1694128201553,
)
# Each real trace that records its device, and the product it ran on (/work/shared/traces/README.md
# says which: the A100-PG509-200 boards report 40 GB, the MI250 trace names its GCD "AMD Radeon
# Graphics" with 104 CUs).
EXPECTED = {
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": "AMD Instinct MI250 (one GCD)",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": A100_40,
    "hta/df_index_resolver/df_index_resolver.json.gz": V100_SXM2,
    "hta/nccl_parser_config/nccl_data.json.gz": A100_40,
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": V100_SXM2,
    "hta/trace_diff/control/control.json.gz": A100_40,
    "hta/triton_example/triton_example.json.gz": A100_40,
    "kineto-tb-plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz": V100_SXM2,
    "kineto-tb-plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz": V100_SXM2,
    **{
        f"param/dlrm_kineto/worker{rank}_step_12.{stamp}.pt.trace.json.gz": V100_SXM2
        for rank, stamp in enumerate(DLRM_STAMPS)
    },
    "tracelens/b200/eager_trace.json.gz": "NVIDIA B200",
    "tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz": H100_SXM,
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz": H100_SXM,
    "tracelens/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz": H100_SXM,
    "tracelens/h100/gaunernst_bert-small-uncased__1016001.json.gz": H100_SXM,
    "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz": H100_SXM,
    "tracelens/mi300/resnet_act_checkpoint.json.gz": MI300X,
    "tracelens/torch_compile_triton/trace.json.gz": MI300X,
}


def _devices(path: Path) -> list[DeviceInfo]:
    """The `deviceProperties` of a trace, read straight from its JSON (not through the reader)."""
    with gzip.open(path, "rt", encoding="utf-8") as stream:
        text = stream.read()
    at = text.find('"deviceProperties"')
    if at < 0:
        return []
    start = text.index("[", at)
    props, _ = json.JSONDecoder().raw_decode(text, start)
    return [
        DeviceInfo(
            index=i,
            name=p["name"],
            total_memory_bytes=p.get("totalGlobalMem"),
            sm_count=p.get("numSms"),
        )
        for i, p in enumerate(props)
    ]


def test_every_entry_has_a_source_and_positive_dense_figures() -> None:
    table = load_peak_table()
    assert len(table) >= 25
    for entry in table:
        peak = entry.peak
        assert peak.source and ("sheet" in peak.source or "specifications" in peak.source), peak
        assert peak.tflops and set(peak.tflops) <= set(DTYPES), peak.device
        assert all(value > 0 for value in peak.tflops.values()), peak.device
        assert peak.tb_s is not None and 0.1 < peak.tb_s < 10, peak.device


def test_figures_are_dense_where_datasheets_print_them_with_sparsity() -> None:
    """Hopper's datasheet prints 1979 TFLOPS BF16 with sparsity: the table keeps 989.4, and the
    16-bit rate of every sparsity-capable part is well below twice its tf32 one."""
    h100 = match_device("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    assert h100.for_dtype("bf16") == pytest.approx(989.4)
    assert h100.for_dtype("fp8") == pytest.approx(2 * 989.4, rel=1e-3)
    for entry in load_peak_table():
        tflops = entry.peak.tflops
        if "tf32" in tflops and "bf16" in tflops:
            # 3%: the HGX page prints B200's TF32 as 2.2 PFLOPS sparse, rounded from 2.25.
            assert tflops["bf16"] == pytest.approx(2 * tflops["tf32"], rel=0.03), entry.peak


def test_each_example_name_resolves_to_its_own_entry() -> None:
    for entry in load_peak_table():
        memory = None if entry.memory_gb is None else int(entry.memory_gb * 1e9)
        for example in entry.examples:
            found = match_device(example, compute_units=entry.compute_units, memory_bytes=memory)
            assert found is entry.peak, example


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", H100_SXM),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
        ("NVIDIA H200", "NVIDIA H200 SXM"),
        ("NVIDIA B200", "NVIDIA B200"),
        ("Tesla V100-SXM2-16GB", V100_SXM2),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 PCIe 40GB"),
        ("AMD Instinct MI300X", MI300X),
        ("AMD Instinct MI250X / MI250", "AMD Instinct MI250X (one GCD)"),
        ("gfx90a", "AMD Instinct MI250X (one GCD)"),
        ("gfx942", MI300X),
    ],
)
def test_names_as_traces_and_nvml_report_them_find_their_product(name: str, expected: str) -> None:
    found = match_device(name)
    assert found is not None and found.device == expected


def test_compute_units_and_memory_decide_between_products_sharing_a_name() -> None:
    mi250 = match_device("AMD Instinct MI250X / MI250", compute_units=104)
    assert mi250 is not None and mi250.device == "AMD Instinct MI250 (one GCD)"
    assert mi250.for_dtype("bf16") == pytest.approx(362.1 / 2, rel=1e-3)
    mi325 = match_device("gfx942", compute_units=304, memory_bytes=256 * 2**30)
    assert mi325 is not None and mi325.device == "AMD Instinct MI325X"
    a100 = match_device("NVIDIA A100-PG509-200", memory_bytes=85_000_000_000)
    assert a100 is not None and a100.device == "NVIDIA A100 SXM4 80GB"
    # A generic name says nothing without its compute units, and an MI300A (228 CUs) is not
    # taken for the MI300X whose arch it shares.
    assert match_device("AMD Radeon Graphics") is None
    assert match_device("AMD Radeon Graphics", compute_units=12) is None
    assert match_device("gfx942", compute_units=228) is None


@pytest.mark.parametrize(
    "name",
    ["NVIDIA A10G", "NVIDIA L40", "NVIDIA GeForce RTX 4090", "Intel(R) Xeon(R) CPU", "", "cpu"],
)
def test_unknown_devices_have_no_peak(name: str) -> None:
    assert match_device(name) is None


def test_a_dtype_has_only_its_own_peak() -> None:
    """No silent tf32-for-fp32 (or any other) fallback: V100 has no tf32 figure."""
    v100 = match_device("Tesla V100-SXM2-32GB")
    assert v100 is not None
    assert v100.for_dtype("fp32") == pytest.approx(15.7)
    assert v100.for_dtype("tf32") is None and v100.for_dtype("bf16") is None
    assert Peak("x", {"tf32": 1.0}, None, "s").for_dtype("fp32") is None


def test_every_real_trace_device_resolves_to_the_product_it_ran_on(shared: Path) -> None:
    seen = {}
    for path in sorted(shared.rglob("*.json.gz")):
        devices = _devices(path)
        if devices:
            peaks = [match_device_info(device) for device in devices]
            seen[path.relative_to(shared).as_posix()] = {p.device if p else None for p in peaks}
    assert seen == {relative: {expected} for relative, expected in EXPECTED.items()}


def test_the_readers_device_finds_its_peak(shared: Path) -> None:
    """End to end: the trace reader's DeviceInfo of the MI250 trace (a generic name) resolves."""
    trace = read_trace(shared / "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    peaks = [match_device_info(device) for device in trace.devices]
    assert len(peaks) == 4  # every device of the trace, each one GCD
    assert {p.device if p else None for p in peaks} == {"AMD Instinct MI250 (one GCD)"}


GOOD = {
    "name": "'x'",
    "names": "['x']",
    "examples": "['x']",
    "source": "'s'",
    "tflops": "{fp32=1.0}",
}


def _table(**fields: str) -> str:
    """A one-entry table: GOOD with `fields` changed (an empty value leaves the key out)."""
    lines = [f"{key} = {value}" for key, value in (GOOD | fields).items() if value]
    return "\n".join(["[[device]]", *lines, ""])


BROKEN = [
    (_table(names="", examples="", source="", tflops=""), "missing required field"),
    ("[[device\n", "not valid TOML"),
    (_table(source="' '"), "has no source"),
    (_table(tflops="{fp4=1.0}"), "unknown dtype 'fp4'"),
    (_table(examples="['y']"), "its example 'y' resolves to nothing"),
    (_table(names="['(']"), "pattern '(' is not a regular expression"),
    (_table(tflops="{fp32=-1.0}"), "positive"),
    (_table(colour="1"), "unknown field `colour`"),
    (_table() + _table(), "'x' is listed twice"),
]


@pytest.mark.parametrize(("text", "says"), BROKEN)
def test_a_broken_table_is_one_line_naming_the_file(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "peaks.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PeakTableError) as caught:
        load_peak_table(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert says in message


def test_the_shipped_table_is_the_one_loaded_by_default() -> None:
    assert load_peak_table() is load_peak_table(PEAKS_FILE)
