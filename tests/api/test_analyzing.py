"""`torchtop.analyze` is `torchtop analyze --format json`, on every shared and sample trace.

The CLI's side is `tests.conftest.analyze_json` (in process, cached per test process, so a
trace another test already analysed is not read again); the API's side reads each input once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import torchtop
from tests.conftest import RESNET_NW0, SHARED, analyze_json
from torchtop.errors import InputError

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
SMALL_BYTES = 500_000


def _inputs() -> list[Path]:
    """Every kind of input, each once: the sample traces (CPU jobs, DDP ranks, the twins),
    the shared traces up to 500 KB (GPU, AMD, Triton, no steps, one rank of many, NCCL), the
    35 MB ResNet-50 trace and a shared folder of ranks. The bigger shared traces take the same
    path through a second of reading each; `test_real_traces.py` reads them all."""
    shared = [p for p in sorted(SHARED.rglob("*.json.gz")) if p.stat().st_size < SMALL_BYTES]
    shared = [p for p in shared if "dlrm_kineto" not in str(p)]  # ranks of one job, below
    if SHARED.is_dir():
        shared += [SHARED / RESNET_NW0, SHARED / "hta/trace_filter"]
    samples = [p.parent for p in sorted(SAMPLES.rglob("*.pt.trace.json.gz"))]
    return [*shared, *dict.fromkeys(samples)]


def _name(path: Path) -> str:
    root = SHARED if path.is_relative_to(SHARED) else REPO
    return str(path.relative_to(root))


@pytest.mark.parametrize("path", _inputs(), ids=_name)
def test_analyze_to_dict_is_the_clis_json_report(path: Path) -> None:
    report = torchtop.analyze(path)
    assert report.to_dict() == analyze_json(path)


def test_two_jobs_are_a_report_each_unless_one_job_pools_them() -> None:
    """Two unrelated traces: `torchtop.reports/1` with a report per job, as the CLI prints;
    `one_job=True` (`--one-job`) reads them as one job."""
    [healthy] = (SAMPLES / "healthy").glob("*.gz")
    [starved] = (SAMPLES / "dataloader_starved").glob("*.gz")
    apart = torchtop.analyze([healthy, starved])
    assert apart.schema == "torchtop.reports/1"
    assert [job.bottleneck for job in apart.jobs] == ["cpu", "dataloader"]
    assert [job.paths for job in apart.jobs] == [[str(healthy)], [str(starved)]]
    with pytest.raises(ValueError, match=r"2 jobs: use report\.jobs"):
        _ = apart.bottleneck
    pooled = torchtop.analyze([healthy, starved], one_job=True)
    assert pooled.schema == "torchtop.report/1"
    assert pooled.paths == [str(healthy), str(starved)]


def test_bad_input_is_the_clis_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        torchtop.analyze(tmp_path / "missing.json.gz")
    with pytest.raises(InputError, match="not with --annotate"):
        torchtop.analyze(tmp_path, cluster="local", annotate=tmp_path / "out.json")
