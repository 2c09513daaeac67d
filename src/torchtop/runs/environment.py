"""The job's environment variables that bear on its speed, as `run.json` keeps them (`env`).

Only variables that change how PyTorch and its libraries run are kept (OpenMP, MKL and the
other BLAS, CUDA, NCCL, PyTorch's own, the allocator), so that `diff` can name one that differs
between two runs; the rest of the environment (paths, the shell, the user's tokens) is not
written anywhere. A name that looks like a secret is skipped even where its prefix matters
(`TORCH_HUB_TOKEN`), and torchtop's own variables (the run folder, the overrides it passes the
agent: `run.json` keeps those as `overrides`) are left out, as they differ on every launch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PREFIXES = (
    "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "BLIS_", "DNNL_", "ONEDNN_", "CUDA_",
    "CUBLAS_", "CUBLASLT_", "CUDNN_", "NCCL_", "GLOO_", "TORCH_", "PYTORCH_", "TORCHINDUCTOR_",
    "TORCHDYNAMO_", "TRITON_", "NVIDIA_TF32_", "MALLOC_", "TCMALLOC_", "JEMALLOC_",
)  # fmt: skip
NAMES = frozenset({"LD_PRELOAD", "MALLOC_CONF", "TOKENIZERS_PARALLELISM"})
OWN_PREFIX = "TORCHTOP_"
SECRET = re.compile(r"TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.I)
MAX_VALUE_CHARS = 200
"""A longer value is cut: these variables hold numbers, words and short lists."""


def speed_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that bear on the job's speed, sorted by name."""
    return {
        name: value[:MAX_VALUE_CHARS] for name, value in sorted(env.items()) if bears_on_speed(name)
    }


def bears_on_speed(name: str) -> bool:
    """`OMP_NUM_THREADS` yes; `HOME`, `TORCHTOP_RUN_DIR` and `NCCL_API_KEY` no."""
    if name.startswith(OWN_PREFIX) or SECRET.search(name):
        return False
    return name in NAMES or name.startswith(PREFIXES)
