"""Watching a running job: launch, tail the run folder, assess, hysteresis."""
