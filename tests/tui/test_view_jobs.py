"""`view` on traces that are not one job: the dashboard shows one job and says which."""

from __future__ import annotations

from pathlib import Path

from tests.tui.conftest import panel_text
from torchtop.sessions.offline import analyze_jobs
from torchtop.tui.app import Dashboard, view_frame

LARGE = (160, 48)


async def test_the_header_names_the_one_job_shown_of_several_and_claims_no_ranks(
    shared: Path,
) -> None:
    jobs = analyze_jobs([str(shared / "tracelens/h100")])[0]
    app = Dashboard(frame=view_frame(jobs.reports[0], None, f"job 1 of {len(jobs.reports)}"))
    async with app.run_test(size=LARGE):
        header = panel_text(app, "#header")
    assert "Falconsai_nsfw_image_detection__1016002.json.gz · job 1 of 5" in header
    assert "ranks" not in header and "5 trace files" not in header
