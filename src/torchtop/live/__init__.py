"""Watching a running job: tail its run folder, assess, hysteresis (`jobs` launches it)."""
