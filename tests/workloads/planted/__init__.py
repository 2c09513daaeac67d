"""Planted CPU jobs, one per bottleneck class, started without torchtop (see `catalog`)."""
