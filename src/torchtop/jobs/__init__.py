"""Jobs: the one place that starts and stops a training command.

- `env`: the job's environment: the agent's bootstrap first on `PYTHONPATH` (once), the run
  folder, the knob overrides for the agent and when it captures profiler windows.
- `job`: `start` (plain values) and `start_plan` (a `model.plan.LaunchPlan`) launch a command
  in its own process group with its output on the user's streams or in files; `Job.stop` stops
  it gracefully and kills what survives of its tree; `Job.record_exit` writes `exit.json`.
- `processes`: the process tree, `is_alive`, the survivors' kill (psutil).
- `records`: the one `run.json` writer, `exit.json`, `default_run_dir`.

`run`, `demo`, `attach`, `tune`, the dashboard's trials and relaunches, the tests and the
benchmarks all launch through here, so a job is started the same way whoever starts it. This
package sits above the agent, the run folder and the data types, and below everything that
watches or measures a job; it imports nothing above it.
"""
