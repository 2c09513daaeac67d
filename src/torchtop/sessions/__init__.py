"""The use cases on top, one verb each; each wires the parts below and owns nothing else.
Only the CLI imports them.

- `watching`: `run` and `demo` (launch, watch, report); `watched`: the job under the
  dashboard and a fix tried on it; `run_config`: `run` with a `torchtop.toml`.
- `injecting`: `attach PID --inject`; `streams`: `watch URL...`.
- `tune`: the `tune` verb around `tuning`.
- `offline`: `analyze` (paths in, a report per job out); `annotated`: `analyze --annotate`;
  `diff`: `diff A B`.
"""
