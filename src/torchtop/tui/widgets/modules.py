"""Time per `nn.Module`, forward and backward, as an indented tree (ms per step).

Shown only when the report has a `modules` section (a trace recorded with `with_stack=True`);
otherwise hidden, so the dashboard's layout is unchanged.
"""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from torchtop.model.memory import ModuleTime
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
            self.display = frame.report.job.modules is not None

    def draw(self, frame: Frame, width: int, height: int) -> RenderableType:
        tree = frame.report.job.modules
        if tree is None:
            return Text("no module calls in the trace", style=MUTED)
        return lines_to_text(module_lines(tree.roots, height), height)
