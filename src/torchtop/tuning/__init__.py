"""`tune`: diagnose, try the best applicable fix through `trials`, keep or revert, repeat.

- `tune`: the loop; `profiled`: an early profiled run for a job too short for the measured
  window.
- `summary`: what `tune` reports (the JSON report with its trials, the text summary).
- `tuned`: `torchtop.toml`, the tuned command, environment and overrides, for reuse by `run`.
"""
