"""Where each file of a run folder lives (documented in docs/run-folder.md).

```
RUN/
  run.json                 the launch: command, cwd, start time, host (written once, atomically)
  events/agent-<pid>.jsonl one file per agent process: hello, settings, steps, windows, bye
  samples/host.jsonl       CPU, memory, disk, network and the job's process tree (psutil)
  samples/gpu.jsonl        per-device and per-process GPU readings (NVML)
  samples/stacks.jsonl     Python stacks of the job's processes (py-spy)
  traces/*.pt.trace.json.gz profiler windows, named as tensorboard_trace_handler names them
  logs/profiler-<pid>.log  what the profiler printed during that process's windows (kept out
                           of the job's stderr)
  exit.json                how the job ended (written once, atomically)
  report.json              the final report
```
"""

from __future__ import annotations

from pathlib import Path

import msgspec

RUN_SCHEMA = "torchtop.run/1"


class RunLayout(msgspec.Struct, frozen=True):
    root: Path

    @property
    def run_json(self) -> Path:
        return self.root / "run.json"

    @property
    def exit_json(self) -> Path:
        return self.root / "exit.json"

    @property
    def report_json(self) -> Path:
        return self.root / "report.json"

    @property
    def events_dir(self) -> Path:
        return self.root / "events"

    @property
    def samples_dir(self) -> Path:
        return self.root / "samples"

    @property
    def traces_dir(self) -> Path:
        return self.root / "traces"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def profiler_log(self, pid: int) -> Path:
        return self.logs_dir / f"profiler-{pid}.log"

    def agent_events(self, pid: int) -> Path:
        return self.events_dir / f"agent-{pid}.jsonl"

    def samples(self, source: str) -> Path:
        return self.samples_dir / f"{source}.jsonl"

    def create(self) -> None:
        for folder in (self.events_dir, self.samples_dir, self.traces_dir):
            folder.mkdir(parents=True, exist_ok=True)


def is_run_folder(path: Path) -> bool:
    return (path / "run.json").is_file() or (path / "events").is_dir()
