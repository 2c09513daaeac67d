"""The report's `settings`: what a recorded run ran with, as JSON (docs/report.md).

`env`, `overrides`, then what the agent saw (`dataloader`, `threads`, `device`, `amp`,
`compiled`, `options`), and `agent`: whether it saw anything (false: those are unknown, null
as not measured). A saved report carries them, so `diff a.json b.json` names a changed
setting as `diff` of the run folders does.
"""

from __future__ import annotations

from torchtop.model.settings import JobSettings


def settings_json(settings: JobSettings) -> dict[str, object]:
    return {
        "env": None if settings.env is None else dict(settings.env),
        "overrides": dict(settings.overrides),
        "agent": settings.agent,
        "dataloader": None if settings.dataloader is None else dict(settings.dataloader),
        "threads": None if settings.threads is None else dict(settings.threads),
        "device": settings.device,
        "amp": settings.amp,
        "compiled": settings.compiled,
        "options": [
            {"dest": o.dest, "flags": list(o.flags), "value": o.value} for o in settings.options
        ],
    }
