"""Start the launcher-side collectors (host, GPU, stacks) for a job; stop them together."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchtop.runs.layout import RunLayout


@dataclass
class Collectors:
    running: list[object] = field(default_factory=list)

    def stop(self) -> None:
        for sampler in self.running:
            sampler.stop()  # type: ignore[attr-defined]


def start_collectors(layout: RunLayout, root_pid: int, with_agent: bool) -> Collectors:
    return Collectors()
