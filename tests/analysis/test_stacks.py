"""classify_stack and attribute on stacks shaped as py-spy reports them (innermost frame first)."""

from __future__ import annotations

from pathlib import Path

from torchtop.analysis.stacks import attribute, classify_stack
from torchtop.runs.records import StackFrame, StackProcess, StacksSample, StackThread

SITE = "/venv/lib/python3.11/site-packages"
STDLIB = "/usr/lib/python3.11"


def frame(function: str, file: str, line: int = 1) -> StackFrame:
    return StackFrame(function=function, file=file, line=line)


TRAIN = frame("<module>", "/job/train.py", 40)
STEP = frame("train_step", "/job/train.py", 20)
FORWARD = [
    frame("Linear.forward", f"{SITE}/torch/nn/modules/linear.py", 125),
    frame("Module._call_impl", f"{SITE}/torch/nn/modules/module.py", 1784),
    frame("Module._wrapped_call_impl", f"{SITE}/torch/nn/modules/module.py", 1773),
]
BACKWARD = [
    frame("_engine_run_backward", f"{SITE}/torch/autograd/graph.py", 829),
    frame("backward", f"{SITE}/torch/autograd/__init__.py", 364),
    frame("Tensor.backward", f"{SITE}/torch/_tensor.py", 630),
]
QUEUE_WAIT = [
    frame("Condition.wait", f"{STDLIB}/threading.py", 327),
    frame("Queue.get", f"{STDLIB}/queue.py", 180),
    frame("_MultiProcessingDataLoaderIter._try_get_data", f"{SITE}/torch/utils/data/dataloader.py"),
    frame("_BaseDataLoaderIter.__next__", f"{SITE}/torch/utils/data/dataloader.py", 725),
]
ALL_REDUCE = [
    frame("all_reduce", f"{SITE}/torch/distributed/distributed_c10d.py", 2806),
    frame("wrapper", f"{SITE}/torch/distributed/c10d_logger.py", 81),
]
SGD_STEP = [
    frame("_single_tensor_sgd", f"{SITE}/torch/optim/sgd.py", 370),
    frame("SGD.step", f"{SITE}/torch/optim/sgd.py", 120),
]


def test_waiting_on_the_worker_queue_under_next_is_the_dataloader() -> None:
    assert classify_stack([*QUEUE_WAIT, TRAIN], active=False) == "dataloader"


def test_a_user_dataset_getitem_under_the_dataloader_is_the_dataloader() -> None:
    getitem = frame("Images.__getitem__", "/job/data.py", 12)
    fetch = frame("_MapDatasetFetcher.fetch", f"{SITE}/torch/utils/data/_utils/fetch.py", 54)
    assert classify_stack([getitem, fetch, *QUEUE_WAIT[2:], TRAIN], active=True) == "dataloader"


def test_autograd_frames_are_backward() -> None:
    assert classify_stack([*BACKWARD, STEP, TRAIN], active=True) == "backward"


def test_forward_rerun_inside_backward_by_checkpointing_counts_as_backward() -> None:
    recompute = frame("CheckpointFunction.backward", f"{SITE}/torch/utils/checkpoint.py", 300)
    stack = [*FORWARD, recompute, frame("apply", f"{SITE}/torch/autograd/function.py"), *BACKWARD]
    assert classify_stack([*stack, TRAIN], active=True) == "backward"


def test_module_calls_outside_backward_are_forward() -> None:
    assert classify_stack([*FORWARD, STEP, TRAIN], active=True) == "forward"


def test_torch_optim_frames_are_the_optimizer() -> None:
    assert classify_stack([*SGD_STEP, STEP, TRAIN], active=True) == "optimizer"


def test_a_collective_inside_the_optimizer_is_the_collective() -> None:
    assert classify_stack([*ALL_REDUCE, *SGD_STEP, TRAIN], active=False) == "collective"


def test_a_collective_work_wait_is_the_collective() -> None:
    wait = frame("wait", f"{SITE}/torch/distributed/distributed_c10d.py", 500)
    assert classify_stack([wait, STEP, TRAIN], active=False) == "collective"


def test_cuda_synchronize_is_sync() -> None:
    sync = frame("synchronize", f"{SITE}/torch/cuda/__init__.py", 985)
    assert classify_stack([sync, STEP, TRAIN], active=False) == "sync"


def test_a_line_calling_item_is_sync_because_item_itself_is_invisible_c_code(
    tmp_path: Path,
) -> None:
    script = tmp_path / "train.py"
    script.write_text("import torch\nloss = compute()\nprint(loss.item())\n", encoding="utf-8")
    waiting = frame("<module>", str(script), 3)
    computing = frame("<module>", str(script), 2)
    assert classify_stack([waiting], active=False) == "sync"
    assert classify_stack([computing], active=True) == "python"


def test_other_code_is_python_when_running_and_idle_when_waiting() -> None:
    assert classify_stack([STEP, TRAIN], active=True) == "python"
    sleeping = frame("wait_for_signal", "/job/train.py", 5)
    assert classify_stack([sleeping, TRAIN], active=False) == "idle"
    assert classify_stack([], active=None) == "python"


def stacks_record(*processes: StackProcess) -> StacksSample:
    return StacksSample(t=0.0, processes=list(processes))


def process(pid: int, role: str, *threads: tuple[int, list[StackFrame], bool]) -> StackProcess:
    return StackProcess(
        pid=pid,
        role=role,
        threads=[
            StackThread(tid=tid, name=None, active=active, frames=frames)
            for tid, frames, active in threads
        ],
    )


def test_attribute_counts_only_the_main_thread_of_main_processes() -> None:
    records = [
        stacks_record(
            process(10, "main", (10, [*QUEUE_WAIT, TRAIN], False), (11, [*BACKWARD], True)),
            process(20, "worker", (20, [*FORWARD, TRAIN], True)),
        ),
        stacks_record(process(10, "main", (10, [*BACKWARD, TRAIN], True))),
        stacks_record(process(10, "main", (10, [*QUEUE_WAIT, TRAIN], False))),
        stacks_record(process(10, "main", (10, [*QUEUE_WAIT, TRAIN], False))),
    ]
    assert attribute(records) == {"backward": 0.25, "dataloader": 0.75}


def test_attribute_of_nothing_is_empty() -> None:
    assert attribute([]) == {}
    assert attribute([stacks_record(process(20, "worker", (20, [TRAIN], True)))]) == {}
