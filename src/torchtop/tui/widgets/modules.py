"""Time per `nn.Module`, forward and backward, as an indented tree (ms per step).

Shown only when the report has a `modules` section (a trace recorded with `with_stack=True`,
or live, the agent's forward hooks after `m`) or while the agents time their modules;
otherwise hidden, so the dashboard's layout is unchanged. The agent's times are host time
(each forward call's wall time on the CPU; on CUDA, its launches), forward only: its first
line says so.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.memory import ModuleTime, ModuleTree
from torchtop.tui.frame import Frame
from torchtop.tui.palette import MUTED
from torchtop.tui.widgets.panel import Panel, lines_to_text


def module_lines(modules: tuple[ModuleTime, ...], rows: int, depth: int = 0) -> list[Text]:
    """`fwd   bwd  name`, parents before children, until `rows` lines are filled."""
    lines: list[Text] = []
    for module in modules:
        if len(lines) >= rows:
            break
        back = "-" if module.backward_ms is None else f"{module.backward_ms:.1f}"
        line = Text(f"{module.forward_ms:8.1f} {back:>8} ", style=MUTED)
        line.append("  " * depth + module.name)
        lines.append(line)
        lines += module_lines(module.children, rows - len(lines), depth + 1)
    return lines[:rows]


class ModulesPanel(Panel):
    TITLE = "Modules (ms/step: forward, backward)"

    def watch_frame(self, frame: Frame | None) -> None:
        if frame is not None:
            self.display = frame.report.job.modules is not None or bool(frame.modules_status)

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        tree = frame.report.job.modules
        heading = [Text(frame.modules_status, style="bold")] if frame.modules_status else []
        if tree is not None and tree.source == "agent":
            heading.append(Text(live_words(tree), style=MUTED))
        if tree is None:
            lines = heading or [Text("no module calls in the trace", style=MUTED)]
            return lines_to_text(lines, height)
        rows = max(height - len(heading), 0)
        return lines_to_text(heading + module_lines(tree.roots, rows), height)


def live_words(tree: ModuleTree) -> str:
    """What the agent's figures are: `host time, steps 130-149, forward only`."""
    last = (tree.first_step or 0) + tree.steps - 1
    clock = "host time (launches)" if (tree.device or "").startswith("cuda") else "host time"
    return f"{clock}, steps {tree.first_step}-{last}, forward only"
