"""Relaunch: measured runs of a launch plan, A/B trials, and `tune` (jobs start and stop
through `torchtop.jobs`).

- `measure`: one run, timed over its steady-state steps (warm-up left out).
- `trial`: `run_trial(before, after, ...)`: both variants measured alike, repeated when within
  noise, kept only when faster beyond noise; written to `RUN/trials/NN.json`. Its values
  (`Trial`, its events and outcomes) are `model.trials`; `handle`: how its caller cancels it.
- `tune`: diagnose, try the best applicable fix, keep or revert, repeat.
- `watched`: the job under the dashboard, and a fix the user accepts there: planned, tried in
  the same trial, the job started again with it or as it ran.
- `tuned`: `torchtop.toml`, the tuned setup for reuse; `summary`, `session`: what `tune` prints
  and writes.
"""
