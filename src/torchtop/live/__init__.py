"""The tick loop behind `run`, `demo`, `attach` and `watch`: follow a run folder, assess it,
publish each tick's snapshot (`jobs` launches the job; `exporters` and `serve` publish).

- `watch`: tail the run folder, fold new records in, assess through the rule tree, repeat.
- `collect`: the launcher-side collectors (host, GPU, stacks), started and stopped together.
- `headless`: `--headless` progress lines on stderr, the report at the end.
"""
