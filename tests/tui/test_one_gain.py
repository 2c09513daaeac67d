"""One gain figure per finding, the same on every surface (issue 19 item 9, issue 20 item 5).

The replayed DataLoader-bound run under the real dashboard: its top finding's gain is read
from the fix list, the verdict panel, the details screen, and the text, Markdown and JSON
reports of the very report the dashboard drew. Each says the finding's one `gain_text` (the
list its short form), and none calls it "up to": the DataLoader share does not bound what
more workers gain.
"""

from __future__ import annotations

from textual.widgets import OptionList, Static

from tests.tui.conftest import LiveApp, advance
from tests.tui.test_one_value import SameJobApplier
from torchtop.model.findings import Finding, gain_short, gain_text
from torchtop.report import report_to_json
from torchtop.report.markdown import render_markdown
from torchtop.report.text import render_text
from torchtop.tui.details import FixDetailsScreen
from torchtop.tui.widgets.verdict import VerdictPanel


async def test_the_same_findings_gain_reads_the_same_on_every_surface(live_app: LiveApp) -> None:
    app = live_app("loader", applier=SameJobApplier())
    async with app.run_test(size=(120, 40)) as pilot:
        await advance(pilot, 6)
        assert app.latest is not None
        report = app.latest.report
        line = str(app.query_one("#fix-options", OptionList).get_option_at_index(0).prompt)
        panel = str(app.query_one(VerdictPanel).render())
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FixDetailsScreen)
        details = str(app.screen.query_one("#details-text", Static).render())
    top = report.verdict.findings[0]
    said = gain_text(top)
    assert said.startswith("predicted ") and "nothing else changed" in said
    assert line.rstrip().endswith(gain_short(top)), line
    for surface in (panel, details, render_text(report), render_markdown(report)):
        assert said in " ".join(surface.split()), surface  # a panel may wrap the line
        assert "up to" not in surface
        assert "expected gain" not in surface
    assert report_to_json(report)["findings"][0]["gain_text"] == said
    assert f"{report.verdict.bottleneck} could recover" in report.verdict.reason
    assert "x)" not in report.verdict.reason, "the reason gives the share, not a second figure"


def finding(share: float | None, gain: float | None, cls: str = "dataloader") -> Finding:
    return Finding("r", cls, "high", "t", "m", "w", {}, (), ("r",), gain, share)


def test_a_share_that_cannot_bound_the_speedup_is_never_called_up_to() -> None:
    """More DataLoader workers also take decoding off the main process, so a 40% wait has
    been measured to gain more than 1 / (1 - 0.4): the figure is a prediction."""
    text = gain_text(finding(0.4, 1.67))
    assert "up to" not in text
    assert text == (
        "predicted 1.67x faster if its 40% of the step were recovered and nothing else changed"
    )
    assert gain_short(finding(0.4, 1.67)) == "pred 1.67x"


def test_an_extreme_prediction_is_said_in_words_not_as_a_figure() -> None:
    text = gain_text(finding(0.99, 100.0))
    assert "100" not in text.replace("99%", "")
    assert text.startswith("the step is almost all dataloader (99%)")
    assert gain_short(finding(0.95, 20.0)) == "almost all dataloader"


def test_a_finding_with_no_model_says_so_in_one_place() -> None:
    assert (
        gain_text(finding(None, None)) == "gain not predicted: no model for what its fixes recover"
    )
    assert gain_short(finding(None, None)) == "no prediction"
