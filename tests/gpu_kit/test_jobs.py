"""Every planted job runs its own code on the CPU (`--device cpu`, small sizes) and prints the
KIT lines the kit reads; on a machine without CUDA the default device is refused in one line."""

from __future__ import annotations

import importlib

import pytest
import torch
from kit_judge import sync_line
from kit_lines import figures, parse_lines
from kit_plan import JOBS

SCRIPTS = sorted({(job.script.removesuffix(".py"), job.args) for job in JOBS.values()})


@pytest.mark.parametrize(("module", "extra"), SCRIPTS)
def test_each_planted_job_trains_a_few_steps_on_the_cpu_and_times_them(
    module: str, extra: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    if "--compile" in extra:
        pytest.skip("torch.compile's first step takes minutes on two loaded cores")
    job = importlib.import_module(module)
    job.main(["--device", "cpu", "--scale", "0.02", "--steps", "4", "--every", "2", *extra])
    out = capsys.readouterr().out
    assert " on cpu (torch " in out.splitlines()[0]
    found = figures(parse_lines(out))
    assert found is not None and (found.first_step, found.last_step) == (2, 4)
    assert found.steps_per_s is not None and found.steps_per_s > 0 and found.gpu_share is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_a_job_asked_for_cuda_on_a_machine_without_it_says_so_in_one_line() -> None:
    job = importlib.import_module("launch_bound")
    with pytest.raises(SystemExit, match="--device cuda: CUDA is not available on this machine"):
        job.main([])


def test_the_planted_sync_line_is_the_item_call() -> None:
    source = (importlib.import_module("item_sync").__file__ or "").removesuffix("c")
    with open(source) as file:
        line = file.read().splitlines()[sync_line() - 1]
    assert ".item()" in line and "KIT-SYNC" in line
