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
  requests/window          touched to ask the agents for a profiler window
  requests/modules         touched to ask the agents to time each module's forward a while
  requests/stop            touched as torchtop starts stopping the job: its KeyboardInterrupt
                           is then a stop, said in one line, not a traceback
  stdout.log, stderr.log   the job's output, where torchtop captured it (trials, relaunches)
  job.log                  the job's output while the dashboard covers the terminal
  job.log.stderr           where in job.log each piece of its stderr was copied (byte ranges)
  exit.json                how the job ended (written once, atomically)
  report.json              the final report
  baseline/                tune's first measured run (a run folder)
  trials/NN.json, NN/      a trial and its measured runs (run folders)
  jobs/NN/                 the job started again after trial NN (a run folder)
  reverts.jsonl            the fixes the user took back
  inject/                  attach --inject: request-<N>.json, ack-<N>.json, detach,
                           detached-<pid>.json (the handshake with the injected agent)
```
"""

from __future__ import annotations

from pathlib import Path

import msgspec

RUN_SCHEMA = "torchtop.run/1"
"""`run.json`'s `schema` (defined here, not beside the records, so that `analyze` of plain
traces, which asks `is_run_folder`, does not define the run folder's Structs)."""


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

    @property
    def window_request(self) -> Path:
        """Touched (never deleted) to ask every agent for one profiler window."""
        return self.root / "requests" / "window"

    @property
    def modules_request(self) -> Path:
        """Touched (never deleted) to ask every agent to time its modules for a few steps."""
        return self.root / "requests" / "modules"

    @property
    def stop_request(self) -> Path:
        """Touched as torchtop starts to stop the job (`jobs.job.Job.stop`): the job's processes
        then tell an uncaught KeyboardInterrupt as the stop it is, in one line, not a traceback
        (`agent/bootstrap/sitecustomize.py` spells the same path: it cannot import this)."""
        return self.root / "requests" / "stop"

    @property
    def stdout_log(self) -> Path:
        return self.root / "stdout.log"

    @property
    def stderr_log(self) -> Path:
        return self.root / "stderr.log"

    @property
    def job_log(self) -> Path:
        return self.root / "job.log"

    @property
    def baseline_dir(self) -> Path:
        return self.root / "baseline"

    @property
    def trials_dir(self) -> Path:
        return self.root / "trials"

    def trial_json(self, number: int) -> Path:
        return self.trials_dir / f"{number:02d}.json"

    def cancelled_trial_json(self, number: int) -> Path:
        """Trial `number` as far as it got before the user cancelled it (`q`)."""
        return self.trials_dir / f"{number:02d}-cancelled.json"

    def trial_dir(self, number: int) -> Path:
        """The measured runs of trial `number`: `{before,after}-K/`, each a run folder."""
        return self.trials_dir / f"{number:02d}"

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"

    def job_dir(self, number: int) -> Path:
        """The job started again after trial `number`."""
        return self.jobs_dir / f"{number:02d}"

    @property
    def reverts(self) -> Path:
        return self.root / "reverts.jsonl"

    def profiler_log(self, pid: int) -> Path:
        return self.logs_dir / f"profiler-{pid}.log"

    def agent_events(self, pid: int) -> Path:
        return self.events_dir / f"agent-{pid}.jsonl"

    @property
    def inject_dir(self) -> Path:
        """`attach --inject`'s handshake with the agent it loads (docs/run-folder.md)."""
        return self.root / "inject"

    def inject_request(self, number: int) -> Path:
        return self.inject_dir / f"request-{number}.json"

    def inject_ack(self, number: int) -> Path:
        return self.inject_dir / f"ack-{number}.json"

    @property
    def inject_detach(self) -> Path:
        return self.inject_dir / "detach"

    def inject_detached(self, pid: int) -> Path:
        return self.inject_dir / f"detached-{pid}.json"

    def samples(self, source: str) -> Path:
        return self.samples_dir / f"{source}.jsonl"

    def create(self) -> None:
        for folder in (self.events_dir, self.samples_dir, self.traces_dir):
            folder.mkdir(parents=True, exist_ok=True)


def is_run_folder(path: Path) -> bool:
    """A run folder: one launcher's, or one several nodes' launchers share (`nodes/`)."""
    layout = RunLayout(path)
    return layout.run_json.is_file() or layout.events_dir.is_dir() or (path / "nodes").is_dir()
