"""A Hugging Face `Trainer` job on a tiny BERT built from a config: no downloads.

Its options come through `HfArgumentParser` (TrainingArguments plus `--load_ms` and `--width`),
so `--dataloader_num_workers` is the framework's own. Input-bound with `--load_ms` > 0 (each
sample sleeps), compute-bound with a wider model and free data. A callback prints the job's own
step count and the num_workers of the DataLoader that `Trainer` built through accelerate.
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.data import Dataset
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    HfArgumentParser,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)


@dataclass
class JobArgs:
    load_ms: float = 0.0
    width: int = 32
    samples: int = 256


class Synthetic(Dataset[dict[str, torch.Tensor]]):
    def __init__(self, size: int, load_ms: float) -> None:
        generator = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 100, (size, 16), generator=generator)
        self.labels = torch.randint(0, 2, (size,), generator=generator)
        self.load_ms = load_ms

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self.load_ms:
            time.sleep(self.load_ms / 1000)
        return {"input_ids": self.ids[index], "labels": self.labels[index]}


class Told(TrainerCallback):
    """The job's own account: optimizer steps taken, and the loader each epoch iterates."""

    def __init__(self) -> None:
        self.stepped_at: list[float] = []

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.stepped_at.append(time.perf_counter())

    def on_epoch_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        loader = kwargs["train_dataloader"]
        print(f"epoch {int(state.epoch or 0)} loader num_workers {loader.num_workers}", flush=True)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        print(f"optimizer steps {state.global_step}", flush=True)
        # From the second step's end on: the steps torchtop keeps after its two warm-up steps.
        # The median: one step also holds torchtop's own profiler export, which it leaves out.
        at = self.stepped_at
        walls_ms = [(b - a) * 1000 for a, b in itertools.pairwise(at[1:])]
        print(f"median step ms {statistics.median(walls_ms):.2f}", flush=True)


def main() -> None:
    torch.set_num_threads(1)
    job, training = HfArgumentParser((JobArgs, TrainingArguments)).parse_args_into_dataclasses()  # type: ignore[arg-type]
    config = BertConfig(
        vocab_size=100, hidden_size=job.width, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=job.width * 4, max_position_embeddings=32,
    )  # fmt: skip
    model = BertForSequenceClassification(config)
    trainer = Trainer(
        model=model,
        args=training,
        train_dataset=Synthetic(job.samples, job.load_ms),
        callbacks=[Told()],
    )
    trainer.train()


if __name__ == "__main__":
    main()
