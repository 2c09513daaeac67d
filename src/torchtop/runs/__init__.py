"""The run folder: what `torchtop run` records, append-only, one writer per file."""

from torchtop.runs.layout import RunLayout, is_run_folder

__all__ = ["RunLayout", "is_run_folder"]
