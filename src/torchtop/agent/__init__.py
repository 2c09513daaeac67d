"""The in-job agent: runs inside the user's training process and writes its run-folder events.

`torchtop run` puts `bootstrap/` first on the job's `PYTHONPATH`; its `sitecustomize` waits for
the job to import torch and then calls `hooks.attach()`, which times steps and DataLoader waits,
captures short profiler windows and reports the job's settings into `RUN/events/` and
`RUN/traces/` (docs/run-folder.md). `torchtop attach --inject` loads the same agent into a job
that is already running (`bootstrap/inject_boot.py` -> `injected.start`), and unloads it.

Only the modules that touch the job's torch (`hooks`, `settings`, `profiler_window`,
`injected_agent`) import it, and only once the job has; everything else here is stdlib, so
`torchtop.step()` (`api`) can be imported by any script, with or without the agent.
"""
