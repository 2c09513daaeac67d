"""Sources that watch a job from outside: psutil (host), NVML (gpu), py-spy (stacks).

Each collector turns one look at the machine into one record of docs/run-folder.md, and each
degrades to "not measured" (an `unavailable` record with its reason, once) instead of failing.
`sampler.Sampler` runs any of them on a thread and writes what they return.
"""
