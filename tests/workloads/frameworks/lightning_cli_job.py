"""A LightningCLI job: `--data.num_workers`, `--data.load_ms` and `--model.width` are its options.

Input-bound with `--data.load_ms` > 0 (each sample sleeps, as a slow decode would), compute-bound
with a wide model and free data. It prints its own step count (a callback counting optimizer steps)
and the num_workers of the DataLoader Lightning actually iterates each epoch, so a test can hold
torchtop's numbers and overrides against the job's own.
"""

from __future__ import annotations

import itertools
import statistics
import time
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.cli import LightningCLI
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    def __init__(self, size: int, features: int, load_ms: float) -> None:
        self.x = torch.randn(size, features)
        self.y = torch.randint(0, 4, (size,))
        self.load_ms = load_ms

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.load_ms:
            time.sleep(self.load_ms / 1000)
        return self.x[index], self.y[index]


class Data(pl.LightningDataModule):
    def __init__(self, num_workers: int = 0, load_ms: float = 0.0, batch_size: int = 16,
                 features: int = 64, size: int = 256) -> None:  # fmt: skip
        super().__init__()
        self.num_workers, self.batch_size = num_workers, batch_size
        self.data = Slow(size, features, load_ms)

    def train_dataloader(self) -> DataLoader[Any]:
        return DataLoader(
            self.data, batch_size=self.batch_size, shuffle=True, num_workers=self.num_workers
        )


class Model(pl.LightningModule):
    def __init__(self, features: int = 64, width: int = 64) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, 4),
        )  # fmt: skip

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class Told(pl.Callback):
    """The job's own account: optimizer steps taken, and the loader each epoch iterates."""

    def __init__(self) -> None:
        self.steps = 0
        self.stepped_at: list[float] = []

    def on_train_epoch_start(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        loader = trainer.train_dataloader
        assert loader is not None
        print(f"epoch {trainer.current_epoch} loader num_workers {loader.num_workers}", flush=True)

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        self.steps = trainer.global_step
        self.stepped_at.append(time.perf_counter())

    def on_train_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        print(f"optimizer steps {self.steps}", flush=True)
        # From the second step's end on: the steps torchtop keeps after its two warm-up steps.
        # The median: one step also holds torchtop's own profiler export, which it leaves out.
        at = self.stepped_at
        walls_ms = [(b - a) * 1000 for a, b in itertools.pairwise(at[1:])]
        print(f"median step ms {statistics.median(walls_ms):.2f}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    LightningCLI(
        Model,
        Data,
        trainer_defaults={
            "accelerator": "cpu",
            "devices": 1,
            "logger": False,
            "enable_checkpointing": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [Told()],
        },
        seed_everything_default=0,
        save_config_callback=None,
    )


if __name__ == "__main__":
    main()
