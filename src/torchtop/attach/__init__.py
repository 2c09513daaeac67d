"""A job's processes from outside: `attach PID`'s target and its ranks, and `--inject`.

- `attach`: the process to watch, checked; the job it belongs to; its agent's run folder.
- `inject`: the outside half of `--inject`, loading the agent into a running process;
  `gdb_call` queues its one statement through gdb; `ptrace_access` says beforehand whether
  this process may ptrace the target.
"""
