"""What the planner knows of the job: the agent's `settings` record, its argv, env and overrides.

The rules name knobs; to plan a fix the planner needs each knob's current value (so it never
"changes" 4 workers to 4), whether the job uses a GPU or DataLoader workers, and which of the
job's options and variables are already set. `JobView` answers those from plain records, so it
is as easy to build in a test as from a run folder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from torchtop.model.knobs import Knob, env_variable
from torchtop.runs.records import CliOption, Settings

_LOADER_FIELDS = {
    "dataloader.num_workers": "num_workers",
    "dataloader.pin_memory": "pin_memory",
    "dataloader.persistent_workers": "persistent_workers",
    "dataloader.prefetch_factor": "prefetch_factor",
    "train.batch_size": "batch_size",
}


@dataclass(frozen=True)
class JobView:
    settings: Settings | None = None
    """The agent's last `settings` record (docs/run-folder.md); None when none was seen."""
    env: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, object] = field(default_factory=dict)
    """Overrides the plan already carries: they win over what the settings say."""
    argv: Sequence[str] | None = None
    """The script's `sys.argv` (the agent's `hello`): which words are the script's options."""

    @property
    def cli_options(self) -> list[CliOption]:
        return list(self.settings.cli_options) if self.settings is not None else []

    @property
    def has_gpu(self) -> bool | None:
        device = self.settings.device if self.settings is not None else None
        return device.startswith("cuda") if device else None

    @property
    def workers(self) -> int | None:
        value = self.current_setting("dataloader.num_workers")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def torch_threads(self) -> int | None:
        threads = self.settings.threads if self.settings is not None else None
        return threads.torch_num_threads if threads is not None else None

    @property
    def usable_cores(self) -> int | None:
        """The cores the process was started on (the agent's `usable_cores`)."""
        threads = self.settings.threads if self.settings is not None else None
        value = threads.usable_cores if threads is not None else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def current_setting(self, knob_name: str) -> object | None:
        """The value the job runs with, as the agent saw it (after this plan's overrides)."""
        if knob_name in self.overrides:
            return self.overrides[knob_name]
        if knob_name == "torch.num_threads":
            return self.torch_threads
        field_name = _LOADER_FIELDS.get(knob_name)
        loader = self.settings.dataloader if self.settings is not None else None
        if field_name is None or loader is None:
            return None
        value: object | None = getattr(loader, field_name)
        return value

    def current_env(self, knob: Knob, name: str) -> object | None:
        """An env knob's current value; OMP_NUM_THREADS unset means torch's own thread count."""
        variable = env_variable(knob, name)
        if variable is None:
            return None
        if variable in self.env:
            return self.env[variable]
        if variable == "OMP_NUM_THREADS":
            return self.torch_threads
        return None
