"""`torchtop view PATH...`: its options, and the dashboard on saved traces or a recorded run
(`tui.app.run_view`); without a terminal, the report as text."""

from __future__ import annotations

import argparse
import sys

from torchtop.cli.options import Verbs, one_job_option, rules_option, segment_option
from torchtop.cli.shared import EXIT_OK, file_progress, load_tree, on_a_terminal, warn_damaged

EXAMPLES = """examples:
  torchtop view trace.json.gz
  torchtop view torchtop-runs/20261127-0149"""


def register(verbs: Verbs) -> None:
    view = verbs.add_parser(
        "view",
        view_command,
        EXAMPLES,
        help="the dashboard on saved traces or a recorded run folder",
    )
    view.add_argument("paths", nargs="+", metavar="PATH", help="traces, a folder of them, or a run")
    rules_option(view)
    one_job_option(view)
    segment_option(view)


def view_command(args: argparse.Namespace) -> int:
    from torchtop.report.jobs import job_name
    from torchtop.sessions.offline import analyze_jobs
    from torchtop.tui.app import run_view

    tree = load_tree(args.rules)
    with file_progress() as progress:  # a big trace is read before the dashboard opens
        jobs, state = analyze_jobs(
            args.paths, tree, progress, one_job=args.one_job, segment=args.segment
        )
    warn_damaged(jobs)
    if not on_a_terminal("view"):
        from torchtop.report.jobs import render_jobs_text

        sys.stdout.write(render_jobs_text(jobs))
        return EXIT_OK
    if len(jobs.reports) == 1:
        run_view(jobs.reports[0], state)
        return EXIT_OK
    # Traces that are not one job: the first, said so on screen and after.
    note = (
        f"the traces are {len(jobs.reports)} jobs, not one: showed the first, "
        f"{job_name(jobs.reports[0])}; `torchtop analyze` reports each, `torchtop view FILE` "
        "shows another"
    )
    run_view(jobs.reports[0], state, aside=f"job 1 of {len(jobs.reports)}")
    print(f"torchtop: {note}", file=sys.stderr)
    return EXIT_OK
