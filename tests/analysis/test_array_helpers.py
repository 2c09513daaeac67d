"""The numpy helpers that stand in for `np.unique`, `np.median` and `np.percentile`.

They exist so that `analyze` never imports `numpy.ma` (those three import it on first use);
they must give numpy's own answers to the last bit, so reports do not change."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import RESNET_NW0, python_run
from torchtop.analysis.vocabulary import distinct, median, percentile


@pytest.mark.parametrize("size", [*range(1, 40), 257, 1000, 1001])
def test_median_and_percentiles_match_numpy_exactly(size: int) -> None:
    rng = np.random.default_rng(size)
    for scale in (1.0, 1e3, 1e9):
        values = rng.random(size) * scale
        assert median(values) == np.median(values)
        for q in (0, 5, 33.3, 50, 95, 99, 100):
            assert percentile(values, q) == np.percentile(values, q), (size, scale, q)


def test_helpers_do_not_reorder_their_input() -> None:
    values = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 0.5])
    before = values.copy()
    assert median(values) == 2.5
    assert percentile(values, 95) == np.percentile(before, 95)
    assert (values == before).all()


def test_median_of_nothing_is_nan() -> None:
    assert np.isnan(median(np.array([], dtype=np.float64)))


@pytest.mark.parametrize(
    "values",
    [[], [7], [3, 3, 3], [2, -1, 2, 9, -1, 0], list(range(50, 0, -3)) * 2, [-(2**62), 2**62, 0]],
)
def test_distinct_matches_numpy_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert distinct(array).tolist() == np.unique(array).tolist()


def test_analysing_a_trace_does_not_import_numpy_ma(shared: Path) -> None:
    """The point of the helpers: numpy.ma costs ~15 ms of every `analyze` run."""
    code = (
        "import sys\n"
        "from torchtop.sessions.offline import analyze_paths\n"
        "from torchtop.report import report_to_json\n"
        "report = analyze_paths(sys.argv[1:])\n"
        "report_to_json(report)\n"
        "print('numpy.ma' in sys.modules)\n"
    )
    result = python_run(code, str(shared / RESNET_NW0))
    assert result.stdout.strip() == "False"
