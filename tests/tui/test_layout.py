"""How the rows are shared (`tui.layout.fit`), the footer kept to one row (`shortened`), and the
verdict's rule path kept whole (`chain_path`): the choices, without a terminal.

The rows are those of an 80x24 terminal: 24 less the header (2), the footer (1) and the fix
list's fewest (4) leave 17 for the verdict row, the lists, the trial and the job's ending."""

from __future__ import annotations

from textual.binding import Binding

from torchtop.tui.arrange import MIDDLE_MORE
from torchtop.tui.layout import FOLDED, Want, fit, folded
from torchtop.tui.widgets.keysfooter import Key, row_cells, shortened
from torchtop.tui.widgets.verdict import chain_path

ROOM_80X24 = 24 - 2 - 1 - 4
TOP = Want("top", 8, 8, 3)
BOTTOM = Want("bottom", 6, 5, 0)


def test_when_everything_fits_each_section_gets_its_most_rows() -> None:
    assert fit(ROOM_80X24, [TOP, BOTTOM]) == {"top": 8, "bottom": 6}


def test_a_crash_folds_the_lists_first_and_gives_the_ending_the_rows_left() -> None:
    ending = Want("jobend", 9, 5, 2)  # its line and a traceback of six
    heights = fit(ROOM_80X24, [TOP, BOTTOM, ending])
    assert heights == {"top": 8, "bottom": FOLDED, "jobend": 8}
    assert folded(heights, [TOP, BOTTOM, ending]) == ["bottom"]


def test_the_fix_list_gets_its_row_more_before_the_ending_grows_and_never_folds() -> None:
    ending = Want("jobend", 9, 5, 2)
    heights = fit(ROOM_80X24, [TOP, BOTTOM, ending, MIDDLE_MORE])
    assert heights == {"top": 8, "bottom": FOLDED, "jobend": 7, "middle": 1}
    assert fit(10, [TOP, BOTTOM, ending, MIDDLE_MORE])["middle"] == 0  # no row left to give


def test_the_section_the_user_unfolds_is_the_last_to_give_way() -> None:
    ending = Want("jobend", 9, 5, 2)
    heights = fit(ROOM_80X24, [TOP, BOTTOM, ending], opened="bottom")
    assert heights == {"top": 8, "bottom": 6, "jobend": FOLDED}


def test_a_kept_trials_outcome_leaves_the_lists_their_fewest_rows() -> None:
    brief = Want("trial", 4, 4, 1)  # the outcome on two lines
    assert fit(ROOM_80X24, [TOP, BOTTOM, brief]) == {"top": 8, "bottom": 5, "trial": 4}


def test_on_a_tiny_terminal_everything_but_the_verdict_folds_before_the_fix_list_shrinks() -> None:
    trial = Want("trial", 7, 7, 1)
    heights = fit(10, [TOP, BOTTOM, trial])
    assert heights == {"top": 8, "bottom": FOLDED, "trial": FOLDED}


def keys(*spec: tuple[str, str, str, bool]) -> list[Key]:
    return [Key(Binding(k, action, words), True, "", own) for k, action, words, own in spec]


FOOTER = keys(
    ("enter", "select", "Details", True),
    ("tab", "app.focus_next", "Panel", False),
    ("a", "app.apply", "Apply", False),
    ("r", "app.revert", "Revert", False),
    ("m", "app.time_modules", "Modules", False),
    ("f", "app.unfold", "Unfold", False),
    ("o", "output", "Output", False),
    ("question_mark", "help", "Help", False),
    ("q", "quit", "Quit", False),
    ("p", "pause", "Pause", False),
)
DISPLAYS = ["⏎", "tab", "a", "r", "m", "f", "o", "?", "q", "p"]


def test_a_footer_too_wide_for_80_columns_loses_words_from_the_right_but_quit_and_help_last() -> (
    None
):
    words = shortened(FOOTER, DISPLAYS, 80)
    assert row_cells(DISPLAYS, [k.words for k in FOOTER]) > 80  # it did not fit whole
    assert row_cells(DISPLAYS, words) <= 80
    assert words[0] == "Details"  # the focused panel's own key keeps its words
    assert words[-1] == "" and words[1:-1] == [k.words for k in FOOTER[1:-1]]  # Pause went
    narrower = shortened(FOOTER, DISPLAYS, 70)
    assert row_cells(DISPLAYS, narrower) <= 70
    assert narrower[-4:] == ["", "Help", "Quit", ""]  # then Output, and before Help and Quit


def test_a_footer_that_fits_keeps_every_word() -> None:
    assert shortened(FOOTER, DISPLAYS, 120) == [k.words for k in FOOTER]


def test_a_rule_path_too_long_keeps_its_last_nodes_after_an_ellipsis() -> None:
    chain = ("dataloader", "dataloader-starved", "dataloader-single-process")
    assert chain_path(chain, 80) == "dataloader › dataloader-starved › dataloader-single-process"
    assert chain_path(chain, 50) == "… › dataloader-starved › dataloader-single-process"
    assert chain_path(chain, 33) == "… › dataloader-single-process"
