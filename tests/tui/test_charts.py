"""Text charts: the stacked bar agrees with the text report cell for cell; sparklines and meters."""

from __future__ import annotations

from collections import Counter

from torchtop.report.text import BAR_WIDTH, _bar, _Style
from torchtop.report.text import GLYPHS as TEXT_GLYPHS
from torchtop.tui.charts import bar_cells, duration, fit, meter, sparkline, stacked_bar
from torchtop.tui.palette import CATEGORIES

BREAKDOWN = {
    "kernel": 0.5551, "memcpy": 0.0108, "memset": 0.0005, "communication": 0.0,
    "runtime": 0.0164, "dataloader": 0.3337, "cpu_exec": 0.0770, "other": 0.0065,
}  # fmt: skip


def test_the_bar_uses_the_text_reports_letters_in_its_order() -> None:
    assert [(c.key, c.letter) for c in CATEGORIES] == [(k, g) for k, (g, _) in TEXT_GLYPHS.items()]


def test_the_bar_gives_each_category_the_same_cells_as_the_text_report() -> None:
    text_bar = _bar(BREAKDOWN, _Style(colour=False)).strip("[]")
    letters = {c.letter: c.key for c in CATEGORIES}
    expected = {letters[g]: n for g, n in Counter(text_bar).items()}
    assert dict(bar_cells(BREAKDOWN, BAR_WIDTH)) == expected


def test_the_bar_is_always_full_width_and_labels_what_fits() -> None:
    bar = stacked_bar(BREAKDOWN, 40)
    assert len(bar.plain) == 40
    assert bar.plain.startswith("K 56%")
    assert "D 33%" in bar.plain


def test_a_bar_with_nothing_measured_is_a_dotted_line() -> None:
    assert stacked_bar({}, 5).plain == "·····"


def test_a_sparkline_is_right_aligned_and_leaves_unmeasured_points_blank() -> None:
    assert sparkline([0.0, None, 1.0], 5, top=1.0).plain == "  ▁ █"


def test_a_long_series_is_averaged_into_the_width() -> None:
    assert fit([1.0, 3.0, 5.0, 7.0], 2) == [2.0, 6.0]


def test_a_meter_fills_eighths_of_a_cell() -> None:
    assert meter(50.0, 4).plain == "██  "
    assert meter(None, 3).plain == "   "


def test_durations_read_as_a_clock() -> None:
    assert duration(65.4) == "1:05"
    assert duration(3725) == "1:02:05"
