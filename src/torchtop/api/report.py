"""`Report`: one analysis as the CLI's JSON document, with tables and a notebook view.

A report holds the very JSON text `torchtop analyze --format json` prints (built by the same
`report.jobs.render_jobs`), and reads everything it offers from that document: so `to_dict()` is
the CLI's output by construction, and a report read back from a saved file (`load_report`)
offers the same properties, tables and view as one analysed a moment ago.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from torchtop.errors import InputError

if TYPE_CHECKING:
    import pandas

    from torchtop.api.frames import FrameName
    from torchtop.model.report import JobReports

REPORT_SCHEMA = "torchtop.report/"
JOBS_SCHEMA = "torchtop.reports/"


class Report:
    """What torchtop found in one input: the verdict, the step figures, the findings and their
    fixes. Several jobs in one folder (not ranks of one job) give a report whose `jobs` holds
    one report each, as `torchtop.reports/1` does on the command line."""

    def __init__(
        self,
        text: str | None,
        model: JobReports | None = None,
        annotated: tuple[Path, ...] = (),
        from_json: bool = False,
    ) -> None:
        if text is None and model is None:
            raise ValueError("a Report needs its JSON text or its model")
        self._json_text = text
        self._parsed: dict[str, Any] | None = None
        self.model = model
        """The in-process model behind the report (`JobReports`) when it was analysed here, for
        the CLI's text and Markdown; None when read from JSON. Not part of the stable API."""
        self.annotated = annotated
        """The annotated traces written (`analyze(..., annotate=OUT)`)."""
        self.from_json = from_json
        """Whether the report was read from a saved JSON file rather than analysed."""
        self.file: Path | None = None
        """The JSON file it was read from (`load_report`)."""

    @property
    def _text(self) -> str:
        """The JSON text, rendered when first asked for by the CLI's own JSON writer (a text
        or Markdown report never needs it)."""
        if self._json_text is None:
            from torchtop.report.jobs import render_jobs

            assert self.model is not None
            self._json_text = render_jobs(self.model, "json")
        return self._json_text

    @property
    def _document(self) -> dict[str, Any]:
        """The JSON parsed when first read: the CLI prints the text and never needs it."""
        if self._parsed is None:
            self._parsed = json.loads(self._text)
        return self._parsed

    @classmethod
    def from_model(cls, jobs: JobReports, annotated: tuple[Path, ...] = ()) -> Report:
        """The report on `jobs`."""
        return cls(None, jobs, annotated)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report, as `torchtop analyze --format json` prints it (a fresh copy each
        call: changing it changes nothing here)."""
        return json.loads(self._text)  # type: ignore[no-any-return]

    def render(self, output_format: str = "text", colour: bool = False) -> str:
        """The report as `torchtop analyze --format FORMAT` prints it: text, markdown or json.
        Text and Markdown need the analysis itself, so a report read from JSON renders only
        as JSON."""
        if output_format == "json":
            return self._text
        if self.model is None:
            raise ValueError(f"a report read from JSON renders as json, not {output_format}")
        from torchtop.report.jobs import render_jobs

        return render_jobs(self.model, output_format, colour)

    def save(self, path: str | Path) -> Path:
        """Write the JSON report to `path` (what `--format json > path` writes); `load_report`
        reads it back."""
        target = Path(path)
        target.write_text(self._text, encoding="utf-8")
        return target

    @property
    def jobs(self) -> tuple[Report, ...]:
        """One report per job: this report alone unless the input held several jobs."""
        if self.schema.startswith(REPORT_SCHEMA):
            return (self,)
        texts = (json.dumps(r, indent=2) + "\n" for r in self._document["reports"])
        if self.model is None:
            return tuple(Report(t, from_json=self.from_json) for t in texts)
        from torchtop.model.report import JobReports

        return tuple(Report(None, JobReports((r,))) for r in self.model.reports)

    @property
    def schema(self) -> str:
        return str(self._document["schema"])

    @property
    def bottleneck(self) -> str:
        """dataloader, memcpy, cpu, gpu, communication, or unknown."""
        return str(self.job_document()["bottleneck"])

    @property
    def confidence(self) -> float:
        return float(self.job_document()["confidence"])

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Each finding as the JSON report has it: rule, class, severity, message, fixes..."""
        return list(self.job_document()["findings"])

    @property
    def steps_per_s(self) -> float | None:
        rate = self.job_document()["steps"].get("steps_per_s")
        return None if rate is None else float(rate)

    @property
    def paths(self) -> list[str]:
        """The trace files or run folder the report is on."""
        if not self.schema.startswith(REPORT_SCHEMA):
            return [p for job in self.jobs for p in job.paths]
        return [str(p) for p in self._document["source"].get("paths", [])]

    @property
    def name(self) -> str:
        """A short name for tables: the first file's name, and how many more there are."""
        names = [PurePath(p).name for p in self.paths] or ["(no files)"]
        return names[0] if len(names) == 1 else f"{names[0]} +{len(names) - 1}"

    def job_document(self) -> dict[str, Any]:
        """The one job's JSON report; an error that points at `jobs` when there are several."""
        if not self.schema.startswith(REPORT_SCHEMA):
            count = len(self._document["reports"])
            raise ValueError(f"the input holds {count} jobs: use report.jobs[i] for one of them")
        return self._document

    def frame(self, name: FrameName) -> pandas.DataFrame:
        """A pandas DataFrame: "operators", "kernels", "steps", "findings", "ranks", "memory"
        or "efficiency" (columns in docs/api.md). pandas is needed only here."""
        from torchtop.api.frames import report_frame

        return report_frame(self.job_document(), name)

    def _repr_html_(self) -> str:
        from torchtop.api.html import report_html

        return "".join(report_html(job.job_document()) for job in self.jobs)

    def __repr__(self) -> str:
        if not self.schema.startswith(REPORT_SCHEMA):
            return f"<torchtop Report: {len(self.jobs)} jobs>"
        return f"<torchtop Report {self.name}: {self.bottleneck} ({self.confidence:.2f})>"


def load_report(path: str | Path) -> Report:
    """A JSON report saved by `--format json`, `--report FILE` or `Report.save`, as a
    `Report`. InputError (one line naming the file) when it is not one."""
    target = Path(path)
    try:
        report = Report(target.read_text(encoding="utf-8"), from_json=True)
        _ = report._document  # parsed now, so a file that is not JSON is refused here
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not a readable JSON report ({exc})") from None
    if not isinstance(report._document, dict) or not str(
        report._document.get("schema", "")
    ).startswith((REPORT_SCHEMA, JOBS_SCHEMA)):
        raise InputError(str(path), "not a torchtop JSON report (no torchtop.report schema)")
    report.file = target
    return report
