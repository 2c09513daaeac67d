"""A request reaches every agent: the run folder's own, and each node's in a shared folder."""

from __future__ import annotations

from pathlib import Path

from torchtop.runs.layout import RunLayout
from torchtop.runs.requests import touch_request


def test_a_request_is_touched_in_the_folder_and_in_every_nodes_folder(tmp_path: Path) -> None:
    for node in ("node-a", "node-b"):
        (tmp_path / "nodes" / node).mkdir(parents=True)
    asked = touch_request(tmp_path, lambda layout: layout.modules_request)
    assert asked == 3
    for folder in (tmp_path, tmp_path / "nodes" / "node-a", tmp_path / "nodes" / "node-b"):
        assert RunLayout(folder).modules_request.is_file()
    assert not RunLayout(tmp_path).window_request.exists()
