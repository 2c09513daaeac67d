"""docs/api.ipynb runs, cell by cell, in a real Jupyter kernel (nbclient, ipykernel), so the
notebook the docs point to cannot rot."""

from __future__ import annotations

from pathlib import Path

import nbclient
import nbformat

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_api_notebook_runs_and_shows_the_verdict_tables_and_comparison() -> None:
    notebook = nbformat.read(DOCS / "api.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(DOCS)}}
    )
    client.execute()  # a cell that raises fails here, naming the cell
    outputs = [
        output
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    ]
    shown = "\n".join(
        str(output.get("data", {}).get("text/html", output.get("text", ""))) for output in outputs
    )
    assert "VERDICT DATALOADER" in shown  # the first report, in its notebook view
    assert "aten::" in shown  # the operators table
    assert "num_workers=4" in shown  # the comparison's rows
    assert "steps_per_s_ratio" in "\n".join(
        str(output.get("data", {}).get("text/plain", "")) for output in outputs
    )
