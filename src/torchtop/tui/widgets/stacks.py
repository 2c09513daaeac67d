"""Hot stacks: where the job's Python spends its time, from py-spy, the user's code first;
sorted by share, function or file, filtered, and each frame's whole path, with the library
frames its time goes to, with Enter. The border's caption says what the shares are of."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from torchtop.tui.frame import Frame
from torchtop.tui.hotstacks import HotFrame, HotStacks
from torchtop.tui.palette import LIBRARY_CODE, MUTED, USER_CODE
from torchtop.tui.widgets.listpanel import ListPanel, Row, Sort


class StacksPanel(ListPanel):
    TITLE = "Hot stacks"
    SORTS: ClassVar[tuple[Sort, ...]] = (Sort("share", True), Sort("function"), Sort("file"))
    hot = HotStacks()

    def empty(self, frame: Frame) -> Text:
        reason = frame.unavailable.get("stacks")
        if reason:
            return Text(f"py-spy: {reason}", style=MUTED)
        if frame.hot.importing:
            return Text(f"{importing_words(frame.hot)}: no training code yet", style=MUTED)
        return Text("no stack samples yet", style=MUTED)

    def rows(self, frame: Frame, width: int, height: int) -> tuple[list[Text], list[Row]]:
        self.hot = frame.hot
        return [], [hot_row(h) for h in frame.hot.frames]

    def caption_text(self) -> str:
        """The list's place, sort and filter, then what 100% is (in the border: no row)."""
        base = super().caption_text()
        room = self.size.width - 6 - len(base)
        whole = next((w for w in whole_words(self.hot) if len(w) + 3 <= room), "")
        return " · ".join(part for part in (base, whole) if part)


def whole_words(hot: HotStacks) -> list[str]:
    """What 100% is, longest first: `% of 38 samples, each at your innermost line · 2
    importing, not counted` down to `% of 38 samples`; none without samples."""
    if not hot.samples:
        return []
    count = f"% of {hot.samples} sample{'s' if hot.samples != 1 else ''}"
    aside = f" · {hot.importing} importing, not counted" if hot.importing else ""
    return [
        f"{count}, each at your innermost line{aside}",
        f"{count}, each once{aside}",
        f"{count}{aside}",
        count,
    ]


def importing_words(hot: HotStacks) -> str:
    return f"{hot.importing} sample{'s' if hot.importing != 1 else ''} taken while importing"


def hot_row(hot: HotFrame) -> Row:
    line = Text(f"{hot.share:4.0%} ", style="bold" if hot.user else MUTED)
    line.append(hot.function, style=USER_CODE if hot.user else LIBRARY_CODE)
    line.append(f"  {hot.where}", style=MUTED)
    where = f"{hot.file}:{hot.line}" if hot.line is not None else hot.file
    code = "your code" if hot.user else "library code (no line of yours on the stack)"
    whole = f"{hot.share:.0%} of samples · {code}\n{hot.function}\n{where}"
    if hot.inside:
        whole += "\n\ninside, where its samples were innermost:\n" + "\n".join(
            f"  {share:4.0%}  {function}  {at}" for function, at, share in hot.inside
        )
    return Row(line, (hot.share, hot.function, where), whole)
