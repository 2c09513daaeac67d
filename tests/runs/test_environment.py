"""The job's environment as `run.json` keeps it: the variables that bear on speed, none that
look like secrets, none of torchtop's own."""

from __future__ import annotations

from torchtop.runs.environment import MAX_VALUE_CHARS, speed_environment


def test_only_speed_variables_are_kept_and_no_secret_or_torchtop_variable() -> None:
    env = {
        "OMP_NUM_THREADS": "2", "KMP_AFFINITY": "compact", "CUDA_VISIBLE_DEVICES": "0",
        "NCCL_DEBUG": "INFO", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
        "LD_PRELOAD": "/usr/lib/libjemalloc.so", "HOME": "/root", "PATH": "/bin",
        "TORCH_HUB_TOKEN": "hunter2", "NCCL_API_KEY": "k", "CUDA_PASSWORD": "p",
        "TORCHTOP_RUN_DIR": "/tmp/run", "TORCHTOP_OVERRIDES": "{}", "AWS_SECRET_ACCESS_KEY": "s",
    }  # fmt: skip
    assert speed_environment(env) == {
        "CUDA_VISIBLE_DEVICES": "0", "KMP_AFFINITY": "compact",
        "LD_PRELOAD": "/usr/lib/libjemalloc.so", "NCCL_DEBUG": "INFO", "OMP_NUM_THREADS": "2",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    }  # fmt: skip


def test_a_long_value_is_cut() -> None:
    kept = speed_environment({"TORCH_LOGS": "x" * 1000})
    assert kept == {"TORCH_LOGS": "x" * MAX_VALUE_CHARS}
