"""plan_fix: which route a fix takes, the plan it yields, and when it does not apply."""

from __future__ import annotations

from typing import Any

import msgspec

from torchtop.advice.machine import Machine
from torchtop.advice.plan import initial_plan, merge_env, plan_fix
from torchtop.advice.show import format_plan
from torchtop.model.findings import Fix
from torchtop.model.plan import LaunchPlan, NotApplicable
from torchtop.runs.records import CliOption, LoaderSettings, Settings, ThreadSettings

TWO_CORES = Machine(logical_cores=2, physical_cores=2)
WORKERS = Fix("dataloader.num_workers", 4, "override", "Load batches in 4 worker processes.")
COMMAND = ["python", "train.py", "--lr", "0.1"]
WORKERS_OPTION = {
    "flags": ["--num-workers"],
    "dest": "num_workers",
    "type": "int",
    "default": 0,
    "value": 0,
}
BATCH_OPTION = {
    "flags": ["--batch-size"],
    "dest": "batch_size",
    "type": "int",
    "default": 32,
    "value": 32,
}


def settings(
    *options: dict[str, Any], workers: int = 0, device: str = "cpu", threads: int = 2
) -> Settings:
    return Settings(
        dataloader=LoaderSettings(num_workers=workers, pin_memory=False, batch_size=32,
                                  persistent_workers=False, prefetch_factor=None),
        threads=ThreadSettings(torch_num_threads=threads),
        device=device,
        cli_options=[msgspec.convert(o, CliOption) for o in options],
    )  # fmt: skip


def base(env: dict[str, str] | None = None) -> LaunchPlan:
    return initial_plan(COMMAND, env or {"PATH": "/usr/bin"}, "/work")


def planned(fix: Fix, job: Settings, **kwargs: Any) -> LaunchPlan:
    plan = plan_fix(fix, kwargs.pop("plan", base()), job, TWO_CORES, **kwargs)
    assert isinstance(plan, LaunchPlan), plan
    return plan


def refused(fix: Fix, job: Settings, **kwargs: Any) -> NotApplicable:
    result = plan_fix(fix, base(), job, TWO_CORES, **kwargs)
    assert isinstance(result, NotApplicable), result
    return result


def test_a_knob_the_script_has_an_option_for_goes_by_arg() -> None:
    plan = planned(WORKERS, settings(WORKERS_OPTION))
    assert plan.route == "arg"
    assert plan.command == (*COMMAND, "--num-workers", "4")
    assert plan.overrides == {}
    assert plan.changes == ("option --num-workers: 0 -> 4",)


def test_without_an_option_a_dataloader_knob_goes_by_override() -> None:
    plan = planned(WORKERS, settings())
    assert plan.route == "override"
    assert plan.command == tuple(COMMAND)
    assert plan.overrides == {"dataloader.num_workers": 4}
    assert plan.changes == ("override dataloader.num_workers: 0 -> 4",)


def test_the_measured_wait_sizes_the_workers_beyond_the_rules_value() -> None:
    plan = planned(WORKERS, settings(), metrics={"dataloader_share": 0.97})
    assert plan.overrides == {"dataloader.num_workers": 8}


def test_an_env_fix_is_merged_into_the_jobs_environment_and_nothing_else_changes() -> None:
    fix = Fix("env.OMP_NUM_THREADS", "cores / (workers + 1)", "env", "fewer threads")
    plan = planned(fix, settings(workers=2))
    assert plan.route == "env"
    assert plan.env == {"PATH": "/usr/bin", "OMP_NUM_THREADS": "1"}
    assert plan.command == tuple(COMMAND)
    assert plan.changes == ("env OMP_NUM_THREADS: unset -> 1",)


def test_a_fix_that_is_already_in_effect_does_not_apply() -> None:
    fix = Fix("env.OMP_NUM_THREADS", "physical cores", "env", "one per core")
    assert "already 2" in refused(fix, settings(threads=2)).reason
    assert "already 4" in refused(WORKERS, settings(workers=4)).reason


def test_a_code_fix_is_never_applied_and_comes_with_its_patch() -> None:
    fix = Fix("code.torch_compile", "model = torch.compile(model)", "code", "Compile the model.")
    result = refused(fix, settings())
    assert "never applied" in result.reason
    assert result.patch is not None and "+    model = torch.compile(model)" in result.patch
    amp = refused(
        Fix("amp.dtype", "float16", "code", "Mixed precision."), settings(), allow={"precision"}
    )
    assert amp.patch is not None and "GradScaler" in amp.patch


def test_a_knob_that_changes_convergence_needs_its_group_allowed() -> None:
    fix = Fix("train.batch_size", "2x", "arg", "Bigger batches.")
    assert "--allow batch-size" in refused(fix, settings(BATCH_OPTION)).reason
    plan = planned(fix, settings(BATCH_OPTION), allow={"batch-size"})
    assert plan.command == (*COMMAND, "--batch-size", "64")
    precision = Fix("torch.float32_matmul_precision", "high", "override", "TF32.")
    assert "--allow precision" in refused(precision, settings()).reason
    assert planned(precision, settings(), allow={"precision"}).overrides == {
        "torch.float32_matmul_precision": "high"
    }


def test_an_arg_only_knob_without_an_option_asks_for_a_binding() -> None:
    fix = Fix("train.batch_size", "2x", "arg", "Bigger batches.")
    assert "torchtop.toml" in refused(fix, settings(), allow={"batch-size"}).reason
    plan = planned(fix, settings(), allow={"batch-size"}, bindings={"train.batch_size": "--bs"})
    assert plan.command == (*COMMAND, "--bs", "64")


def test_gpu_knobs_do_not_apply_to_a_cpu_job() -> None:
    assert (
        "GPU" in refused(Fix("dataloader.pin_memory", True, "override", "Pin."), settings()).reason
    )
    cudnn = Fix("torch.backends.cudnn.benchmark", True, "override", "Autotune.")
    assert planned(cudnn, settings(device="cuda:0")).overrides == {
        "torch.backends.cudnn.benchmark": True
    }


def test_worker_only_knobs_need_workers_and_count_those_the_plan_already_adds() -> None:
    persistent = Fix("dataloader.persistent_workers", True, "override", "Keep workers.")
    assert "workers" in refused(persistent, settings()).reason
    with_workers = planned(WORKERS, settings())
    plan = planned(persistent, settings(), plan=with_workers)
    assert plan.overrides == {"dataloader.num_workers": 4, "dataloader.persistent_workers": True}
    assert [f.knob for f in plan.fixes] == [
        "dataloader.num_workers",
        "dataloader.persistent_workers",
    ]


def test_an_unknown_knob_is_refused_by_name() -> None:
    assert "catalogue" in refused(Fix("magic.speed", 11, "override", "?"), settings()).reason


def test_torchtops_own_variables_never_travel_in_a_plan() -> None:
    plan = initial_plan(COMMAND, {"TORCHTOP_RUN_DIR": "/old", "HOME": "/root"}, "/work")
    assert plan.env == {"HOME": "/root"}


def test_preloads_and_allocator_options_keep_what_the_job_had() -> None:
    assert merge_env("LD_PRELOAD", "/lib/a.so", "/lib/b.so") == "/lib/b.so /lib/a.so"
    assert merge_env(
        "PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128", "expandable_segments:True"
    ) == ("max_split_size_mb:128,expandable_segments:True")
    assert merge_env("OMP_NUM_THREADS", "8", "2") == "2"


def test_the_plan_is_shown_with_the_old_and_new_command_and_environment() -> None:
    fix = Fix("env.OMP_NUM_THREADS", 1, "env", "fewer threads")
    text = format_plan(base(), planned(fix, settings()))
    assert "old command: python train.py --lr 0.1" in text
    assert "new command: python train.py --lr 0.1" in text
    assert "OMP_NUM_THREADS: unset -> 1" in text
    text = format_plan(base(), planned(WORKERS, settings(WORKERS_OPTION)))
    assert "new command: python train.py --lr 0.1 --num-workers 4" in text
    assert "environment: unchanged" in text
    text = format_plan(base(), planned(WORKERS, settings()))
    assert "dataloader.num_workers = 4" in text.split("overrides")[1]
