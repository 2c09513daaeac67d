"""The labelled corpus (docs/verdicts.md): every row's verdict and predicted gain, on its trace.

The rows are real traces: the public GPU ones under ../shared/traces (skipped where that folder
is absent) and the CPU jobs under sample_traces/, among them twins recorded before and after a
fix, whose measured speedup the table sets beside the predicted gain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.diagnosis.verdict_corpus import GAIN_TOLERANCE, REPO, SHARED_PREFIX, Row, measure, rows

ROWS = rows()


def test_the_corpus_has_every_trace_we_hold_and_at_least_24_rows() -> None:
    listed = {row.path for row in ROWS}
    samples = {str(p.relative_to(REPO)) for p in (REPO / "sample_traces").rglob("*.json.gz")}
    assert samples <= listed, sorted(samples - listed)
    assert len(ROWS) >= 24
    assert all(row.reason and row.verdict for row in ROWS)


def test_the_corpus_lists_every_shared_trace(shared: Path) -> None:
    on_disk = {SHARED_PREFIX + str(p.relative_to(shared)) for p in shared.rglob("*.json.gz")}
    assert on_disk <= {row.path for row in ROWS}, sorted(on_disk - {row.path for row in ROWS})


def test_every_twin_pair_has_its_measured_speedup_beside_the_prediction() -> None:
    twins = [row for row in ROWS if row.twin is not None]
    assert len(twins) >= 7  # 5 sample_traces/twins pairs (ddp per rank) and 2 ResNet-50 pairs
    assert all(row.measured is not None and row.predicted_gain is not None for row in twins)


@pytest.mark.parametrize("row", ROWS, ids=[row.path.rsplit("/", 3)[-3] for row in ROWS])
def test_each_trace_gets_its_listed_verdict_and_predicted_gain(row: Row) -> None:
    if row.path.startswith(SHARED_PREFIX) and not row.file.exists():
        pytest.skip(f"{row.file} is absent: the shared GPU traces are not beside this checkout")
    got = measure(row)
    assert got["verdict"] == row.verdict, f"{row.path}: {got}"
    if row.predicted_gain is None:
        assert got["predicted_gain"] is None
    else:
        assert got["predicted_gain"] == pytest.approx(row.predicted_gain, rel=GAIN_TOLERANCE)
    # Every finding carries its gain: a bound of at least 1x, or None where there is no model.
    assert all(g is None or (isinstance(g, float) and g >= 1.0) for g in got["finding_gains"])
    if row.measured is not None:
        assert got["measured"] == pytest.approx(row.measured, rel=GAIN_TOLERANCE)
