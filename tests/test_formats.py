"""`--format json` on every verb that prints: stdout is then the JSON document and nothing
else (a job's own output goes to its log), the same document the run folder keeps."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import RULES_DIR
from torchtop.cli import DEMO_FOR_S, main
from torchtop.diagnosis.rules import load_rules
from torchtop.runs.layout import RunLayout
from torchtop.sessions import watching
from torchtop.sessions.watch_options import WatchOptions

TORCHTOP = [sys.executable, "-m", "torchtop"]
JOB_SAYS = "hello from the job"


def torchtop(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TORCHTOP, *args], capture_output=True, text=True, timeout=timeout)


def test_rules_as_json_lists_the_rule_of_every_shipped_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["rules", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    shipped = {p.stem for p in RULES_DIR.glob("*.toml") if not p.stem.startswith("_")}
    listed = {rule["id"] for rule in document["rules"]}
    assert shipped == listed  # one rule a file; `_verdict` holds the settings
    tree = load_rules(None)
    assert len(document["rules"]) == len(tree.rules)
    roots = [rule["id"] for rule in document["rules"] if rule["parent"] is None]
    assert set(roots) == {rule.id for rule in tree.roots}
    assert document["verdict"]["min_steps"] == tree.settings.min_steps


def test_one_rule_as_json_carries_its_chain_and_the_knobs_of_its_fixes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tree = load_rules(None)
    rule = next(r for r in tree.rules.values() if r.parent is not None and r.fixes)
    assert main(["rules", rule.id, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["chain"][-1] == rule.id and document["chain"][0] == tree.chain(rule.id)[0]
    assert [fix["knob"] for fix in document["fixes"]] == [fix.knob for fix in rule.fixes]


def test_run_headless_as_json_prints_only_the_report_and_logs_the_jobs_output(
    tmp_path: Path,
) -> None:
    job = f"import time; print({JOB_SAYS!r}, flush=True); time.sleep(0.5)"
    run_dir = tmp_path / "run"
    result = torchtop(
        "run", "--headless", "--format", "json", "--run-dir", str(run_dir),
        "--", sys.executable, "-c", job,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == json.loads(RunLayout(run_dir).report_json.read_text())
    assert printed["source"]["kind"] == "run"
    assert JOB_SAYS in RunLayout(run_dir).job_log.read_text()
    assert f"the job's output is in {RunLayout(run_dir).job_log}" in result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"torchtop: the run is kept in {run_dir}; `torchtop view {run_dir}` shows it again"
    )


def test_watch_as_json_prints_the_report_of_a_run_folder(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    launched = torchtop(
        "run", "--headless", "--run-dir", str(run_dir), "--", sys.executable, "-c", "pass"
    )
    assert launched.returncode == 0, launched.stderr
    result = torchtop("watch", str(run_dir), "--headless", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["schema"] == "torchtop.report/1"


def test_attach_as_json_prints_the_report_and_leaves_the_process_running(
    tmp_path: Path,
) -> None:
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)  # an interpreter that has started, not a fork still exec'ing
        result = torchtop(
            "attach", str(target.pid), "--headless", "--for", "2", "--format", "json",
            "--run-dir", str(tmp_path / "run"),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        printed = json.loads(result.stdout)
        assert printed["source"]["kind"] == "attach"
        assert target.poll() is None
    finally:
        target.kill()
        target.wait()


def test_a_folder_without_traces_says_in_one_line_how_to_record_some(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(tmp_path)]) == 2
    (said,) = capsys.readouterr().err.splitlines()
    assert said == (
        f"torchtop: {tmp_path}: folder holds no .json or .json.gz trace "
        "(`torchtop run -- python train.py` records some)"
    )


@pytest.mark.parametrize(
    ("argv", "for_s"),
    [
        (["demo"], None),  # the dashboard stays until q
        (["demo", "--headless"], DEMO_FOR_S),  # nobody there to press q
        (["demo", "--for", "5"], 5.0),
        (["demo", "--headless", "--for", "7"], 7.0),
    ],
)
def test_the_demo_stops_by_itself_only_when_headless_or_asked(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], for_s: float | None
) -> None:
    """The session is replaced by a recorder, so nothing is launched: this is the options'
    wiring; tests/tui/test_tmux_demo.py watches the dashboard stay in a real terminal."""
    seen: list[WatchOptions] = []

    def record(command: object, options: WatchOptions, tree: object, kind: str) -> int:
        seen.append(options)
        return 0

    monkeypatch.setattr(watching, "run_session", record)
    # As from a terminal: with stdout not one, the demo runs headless (test_not_a_terminal.py).
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(argv) == 0
    assert [options.for_s for options in seen] == [for_s]
