"""The settings a recorded run ran with: its launch's environment and overrides, and what the
agent inside it saw (DataLoader, threads, device, precision, compile, the script's options).

The report's `settings` (docs/report.md) and what `diff` compares first: two runs that differ in
`num_workers` are named by it before any figure. Values are kept as recorded, a None where the
agent did not see it; a run folder written before a field existed, or a trace, has no setting
to give, and says so by leaving it None rather than guessing.
"""

from __future__ import annotations

import msgspec

Scalar = str | int | float | bool | None
"""A setting's value: what a variable, a flag or an option carries."""


class ScriptOption(msgspec.Struct, frozen=True):
    """One option of the script's parser: its `dest`, its flags (`-j`, `--workers`: to name a
    command-line change by the option it sets) and the value parsed."""

    dest: str
    flags: tuple[str, ...] = ()
    value: Scalar = None


class JobSettings(msgspec.Struct, frozen=True):
    env: dict[str, str] | None = None
    """The variables bearing on speed the job was started with (`run.json`'s `env`); None
    where the launch did not record them (attach, an older run folder)."""
    overrides: dict[str, Scalar] = msgspec.field(default_factory=dict)
    """torchtop's own fixes applied in the launch, knob -> value (`run.json`'s and the
    agent's)."""
    dataloader: dict[str, Scalar] | None = None
    """The last DataLoader iterated: `num_workers`, `pin_memory`, `batch_size`,
    `persistent_workers`, `prefetch_factor`; None where the agent saw none."""
    threads: dict[str, Scalar] | None = None
    """`torch_num_threads`, `torch_interop_threads`, `omp_num_threads_env`,
    `omp_proc_bind_env`, `openmp_runtime`, `usable_cores`."""
    device: str | None = None
    amp: bool | None = None
    compiled: bool | None = None
    options: tuple[ScriptOption, ...] = ()
    """The script's argparse options as parsed."""
    agent: bool = False
    """Whether an agent inside the job recorded its settings (the fields above from
    `dataloader` on); False: they are unknown, not unset."""
