"""The planted jobs' KIT lines: their own rate and CUDA-event share, the kit's outside truth."""

from __future__ import annotations

import pytest
from kit_lines import figures, parse_lines

RECORDED = """\
fp32-matmul on NVIDIA H100 80GB HBM3 (torch 2.11.0+cu130): width=8192 batch=4096 compile=False
KIT step=10 t_s=3.0000 gpu_ms=1900.000 window=10
torchtop    5.0s  verdict unknown
KIT step=20 t_s=5.0000 gpu_ms=1960.000 window=10
KIT step=30 t_s=7.0000 gpu_ms=1940.000 window=10
"""


def test_the_rate_and_gpu_share_are_read_between_the_first_and_last_line() -> None:
    found = figures(parse_lines(RECORDED))
    assert found is not None
    assert (found.first_step, found.last_step, found.steps) == (10, 30, 20)
    assert found.steps_per_s == pytest.approx(5.0)
    # the first window (set-up) stays out: (1960 + 1940) ms over 4 s
    assert found.gpu_share == pytest.approx(0.975)
    assert found.marks == ((10, 3.0), (20, 5.0), (30, 7.0))


def test_a_cpu_job_has_a_rate_but_no_gpu_share() -> None:
    found = figures(
        parse_lines(
            "KIT step=2 t_s=1.0 gpu_ms=None window=2\nKIT step=6 t_s=3.0 gpu_ms=None window=2\n"
        )
    )
    assert found is not None and found.steps_per_s == pytest.approx(2.0) and found.gpu_share is None


def test_fewer_than_two_lines_give_no_figures() -> None:
    assert figures(parse_lines("KIT step=10 t_s=3.0 gpu_ms=1.0 window=10\n")) is None
    assert figures([]) is None
