"""rules/_frames.toml: the frame patterns load checked, and name real libtorch stacks right.

The stacks below are copied from `py-spy dump --native` of real jobs on this project's CPU
machine (torch 2.13.0): the copy-heavy job, rank 0 of the 2-rank gloo DDP job, and a matmul.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchtop.diagnosis.frames import BETWEEN, FRAMES_FILE, OP, load_frame_patterns
from torchtop.diagnosis.rules import RuleError, default_rules_dir

COPY_UNDER_OPENMP = [
    ("0x7f36b121de62", "libgomp.so.1"),
    ("0x7f36b121c19a", "libgomp.so.1"),
    ("GOMP_parallel", "libgomp.so.1"),
    ("at::TensorIteratorBase::for_each", "libtorch_cpu.so"),
    ("at::native::AVX2::direct_copy_kernel", "libtorch_cpu.so"),
    ("at::native::copy_impl", "libtorch_cpu.so"),
    ("at::native::copy_", "libtorch_cpu.so"),
    ("at::native::clone", "libtorch_cpu.so"),
    ("at::native::contiguous", "libtorch_cpu.so"),
    ("torch::autograd::THPVariable_contiguous", "libtorch_python.so"),
]
DDP_RANK0_IN_BACKWARD = [
    ("0x7f6219ca3f16", "libc.so.6"),
    ("pthread_cond_wait", "libc.so.6"),
    ("std::condition_variable::wait", "libstdc++.so.6.0.30"),
    ("c10d::Reducer::finalize_backward", "libtorch_cpu.so"),
    ("torch::autograd::GraphTask::exec_post_processing", "libtorch_cpu.so"),
    ("torch::autograd::Engine::thread_main", "libtorch_cpu.so"),
    ("THPEngine_run_backward", "libtorch_python.so"),
]
MEAN_AT_THE_BARRIER = [
    ("0x7f36b121e02a", "libgomp.so.1"),
    ("0x7f36b121ca9d", "libgomp.so.1"),
    ("at::TensorIteratorBase::parallel_reduce", "libtorch_cpu.so"),
    ("at::native::(anonymous namespace)::sum_kernel_impl", "libtorch_cpu.so"),
    ("torch::autograd::THPVariable_mean", "libtorch_python.so"),
]
BIAS_COPIED_BY_ADDMM = [
    ("at::native::AVX2::direct_copy_kernel", "libtorch_cpu.so"),
    ("at::native::copy_impl", "libtorch_cpu.so"),
    ("at::native::copy_", "libtorch_cpu.so"),
    ("at::_ops::copy_::call", "libtorch_cpu.so"),
    ("at::native::addmm_impl_cpu_", "libtorch_cpu.so"),
    ("at::_ops::addmm::call", "libtorch_cpu.so"),
]
MATMUL_WORKING = [
    ("mkl_blas_avx512_sgemm_kernel_0_b0", "libtorch_cpu.so"),
    ("GOMP_parallel", "libgomp.so.1"),
    ("at::native::addmm_out_cpu", "libtorch_cpu.so"),
]


ARGUMENTS_PARSED = [
    ("THPVariable_Check", "libtorch_python.so"),
    ("torch::PythonArgs::tensor_slow", "libtorch_python.so"),
    ("torch::autograd::THPVariable_mul", "libtorch_python.so"),
]
ENGINE_BETWEEN_NODES = [
    ("pthread_mutex_lock", "libc.so.6"),
    ("torch::autograd::ReadyQueue::push", "libtorch_cpu.so"),
    ("torch::autograd::Engine::thread_main", "libtorch_cpu.so"),
]
FREED_BY_PYTHON = [("0x7f8db48b472c", "libc.so.6"), ("free", "libc.so.6")]


def test_the_shipped_patterns_name_copies_collectives_openmp_waits_and_operators() -> None:
    patterns = load_frame_patterns()
    assert patterns.place(COPY_UNDER_OPENMP) == "copy", "a copy OpenMP runs is still a copy"
    assert patterns.place(DDP_RANK0_IN_BACKWARD) == "collective"
    assert patterns.place(MEAN_AT_THE_BARRIER) == "openmp"
    assert patterns.place(MATMUL_WORKING) == OP, "GOMP_parallel below a kernel is work"
    assert patterns.place(BIAS_COPIED_BY_ADDMM) == OP, "a copy inside addmm is addmm's"
    assert patterns.place(ARGUMENTS_PARSED) == BETWEEN, "Python's bindings are outside ops"
    assert patterns.place(ENGINE_BETWEEN_NODES) == "backward"
    assert patterns.place(FREED_BY_PYTHON) is None, "the C library alone is no operator"
    assert patterns.place([]) is None
    assert patterns.communication_threads is not None
    assert patterns.communication_threads.search("pt_gloo_runloop")
    assert not patterns.communication_threads.search("python")


def broken(tmp_path: Path, old: str, new: str) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), folder)
    path = folder / FRAMES_FILE
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return folder


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        ('place = "copy"', 'plaec = "copy"', "unknown key 'patterns[5].plaec'"),
        ('function = "^c10d::"', 'function = "^c10d::("', "not a regular expression"),
        ('function = "^gloo::"', 'function = "^glooo::"', "does not match it"),
        ('place = "sync"', 'place = "syncing"', "is not one of places"),
    ],
    ids=["misspelt-key", "bad-regex", "example-does-not-match", "unknown-place"],
)
def test_a_bad_pattern_file_is_a_one_line_error_naming_the_file(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    folder = broken(tmp_path, old, new)
    with pytest.raises(RuleError) as raised:
        load_frame_patterns(folder)
    message = str(raised.value)
    assert message.startswith(f"{folder / FRAMES_FILE}: ")
    assert said in message and "\n" not in message


def test_attach_with_a_bad_pattern_file_stops_at_once_with_status_2(tmp_path: Path) -> None:
    folder = broken(tmp_path, 'function = "^gloo::"', 'function = "^glooo::"')
    result = subprocess.run(
        [sys.executable, "-m", "torchtop", "attach", "1"],
        capture_output=True,
        text=True,
        env={"TORCHTOP_RULES": str(folder), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(folder / FRAMES_FILE) in lines[0], result.stderr
