"""The command line: analyze in three formats, rules, and bad input as one line and status 2."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import RESNET_NW0, RULES_DIR, python_run
from tests.synthetic import document, two_step_loop, write_json
from torchtop import __version__
from torchtop.cli import BLAS_THREAD_VARIABLES, build_parser, main

EXIT_OK = 0
EXIT_BAD_INPUT = 2


@pytest.fixture
def loop_trace(tmp_path: Path) -> Path:
    """Two 100 µs steps: kernel 40%, dataloader 20%, memcpy/runtime/cpu_exec/other 10% each."""
    return write_json(tmp_path / "loop.json", document(two_step_loop()))


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def run_process(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchtop", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# --- analyze ---------------------------------------------------------------------------------


def test_json_output_follows_the_report_contract(
    capsys: pytest.CaptureFixture[str], loop_trace: Path
) -> None:
    status, out, err = run_main(capsys, "analyze", str(loop_trace), "--format", "json")
    assert status == 0, err
    report = json.loads(out)
    assert report["schema"] == "torchtop.report/1"
    assert report["source"] == {"kind": "trace", "paths": [str(loop_trace)]}
    assert report["steps"]["count"] == 2
    assert report["steps"]["mean_ms"] == pytest.approx(0.1)
    assert report["breakdown"] == pytest.approx(
        {"kernel": 0.4, "memcpy": 0.1, "memset": 0.0, "communication": 0.0, "runtime": 0.1,
         "dataloader": 0.2, "cpu_exec": 0.1, "other": 0.1}
    )  # fmt: skip
    assert report["bottleneck"] in report["verdict"]["scores"]
    assert report["verdict"]["scores"][report["bottleneck"]] == max(
        report["verdict"]["scores"].values()
    )
    assert "dataloader-starved" in {f["rule"] for f in report["findings"]}
    assert err == ""


def test_text_output_leads_with_the_verdict_and_draws_a_full_width_bar(
    capsys: pytest.CaptureFixture[str], loop_trace: Path
) -> None:
    main(["analyze", str(loop_trace), "--format", "json"])
    bottleneck = json.loads(capsys.readouterr().out)["bottleneck"]
    status, out, _ = run_main(capsys, "analyze", str(loop_trace), "--color", "never")
    assert status == 0
    lines = out.splitlines()
    assert any(line.startswith("VERDICT") and bottleneck.upper() in line for line in lines)
    bars = [line for line in lines if line.startswith("  [")]
    assert len(bars) == 1
    assert len(bars[0].strip()) == 62  # '[' + 60 cells + ']'
    assert bars[0] == "  [" + "K" * 24 + "M" * 6 + "R" * 6 + "D" * 12 + "C" * 6 + "." * 6 + "]"
    assert "\x1b[" not in out


def test_text_output_is_coloured_only_when_asked(
    capsys: pytest.CaptureFixture[str], loop_trace: Path
) -> None:
    _, out, _ = run_main(capsys, "analyze", str(loop_trace), "--color", "always")
    assert "\x1b[" in out


def test_markdown_output_names_the_verdict_and_the_breakdown(
    capsys: pytest.CaptureFixture[str], loop_trace: Path
) -> None:
    main(["analyze", str(loop_trace), "--format", "json"])
    bottleneck = json.loads(capsys.readouterr().out)["bottleneck"]
    status, out, _ = run_main(capsys, "analyze", str(loop_trace), "--format", "markdown")
    assert status == 0
    assert out.startswith("# torchtop report")
    assert f"**Bottleneck: `{bottleneck}`**" in out
    assert "| dataloader | 20.00% |" in out
    assert "## Findings" in out


def test_a_real_trace_reads_the_same_in_all_three_formats(
    capsys: pytest.CaptureFixture[str], shared: Path
) -> None:
    trace = str(shared / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    _, out, _ = run_main(capsys, "analyze", trace, "--format", "json")
    bottleneck = json.loads(out)["bottleneck"]
    assert bottleneck == "communication"
    _, text, _ = run_main(capsys, "analyze", trace, "--color", "never")
    _, markdown, _ = run_main(capsys, "analyze", trace, "--format", "markdown")
    assert "VERDICT  COMMUNICATION" in text
    assert "`communication`" in markdown


def test_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"torchtop {__version__}"


# --- rules -----------------------------------------------------------------------------------


def test_rules_lists_every_rule_id(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_main(capsys, "rules")
    assert status == 0
    listed = {line.split()[0] for line in out.splitlines() if line.strip()}
    ids = {p.stem for p in RULES_DIR.glob("[!_]*.toml")}
    assert ids <= listed
    assert out.startswith(f"{len(ids)} rules")


def test_rules_shows_one_rule_with_its_why_and_fixes(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_main(capsys, "rules", "dataloader-starved")
    assert status == 0
    assert out.startswith("dataloader-starved: ")
    assert "chain     dataloader > dataloader-starved" in out
    assert "  why\n" in out
    assert "torch-tb-profiler" in out
    assert "  fixes\n" in out
    assert "dataloader.num_workers = 4" in out


def test_an_unknown_rule_id_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main(capsys, "rules", "nope")
    assert status == EXIT_BAD_INPUT
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "nope" in err


def test_a_broken_rules_folder_exits_2_naming_the_rule_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "gpu.toml").write_text(
        'id = "gpu"\nclass = "gpu"\ntitle = "t"\nwhen = "gpu_util > 1"\nwhy = "x"\n'
    )
    status, _, err = run_main(capsys, "rules", "--rules", str(folder))
    assert status == EXIT_BAD_INPUT
    assert len(err.splitlines()) == 1
    assert str(folder / "gpu.toml") in err
    assert "gpu_util" in err


# --- bad input -------------------------------------------------------------------------------


def _truncated_gz(path: Path) -> Path:
    packed = gzip.compress(json.dumps(document(two_step_loop())).encode())
    path.write_bytes(packed[:30])
    return path


BAD_INPUTS: dict[str, Callable[[Path], Path]] = {
    "missing path": lambda tmp: tmp / "no-such-trace.json",
    "empty file": lambda tmp: _write(tmp / "empty.json", b""),
    "not JSON": lambda tmp: _write(tmp / "notes.json", b"this is not json\n"),
    "truncated gz with nothing whole": lambda tmp: _truncated_gz(tmp / "cut.json.gz"),
    "JSON that is not a trace": lambda tmp: _write(tmp / "config.json", b'{"a": 1}'),
    "folder with no traces": lambda tmp: _folder(tmp / "empty-run"),
    "not gzip despite the name": lambda tmp: _write(
        tmp / "fake.json.gz", b"\x1f\x8bnot really gzip"
    ),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    (path / "README.txt").write_text("no traces here")
    return path


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    path = BAD_INPUTS[case](tmp_path)
    status, out, err = run_main(capsys, "analyze", str(path), "--format", "json")
    assert status == EXIT_BAD_INPUT
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("torchtop: ")
    assert str(path) in err
    assert "Traceback" not in err


@pytest.mark.parametrize("case", ["missing path", "not JSON", "truncated gz with nothing whole"])
def test_bad_input_in_a_real_process_exits_2_without_a_traceback(tmp_path: Path, case: str) -> None:
    path = BAD_INPUTS[case](tmp_path)
    result = run_process("analyze", str(path))
    assert result.returncode == EXIT_BAD_INPUT
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert str(path) in result.stderr
    assert "Traceback" not in result.stderr


def test_one_bad_file_among_good_ones_is_skipped_and_named_and_the_rest_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, loop_trace: Path
) -> None:
    bad = _write(tmp_path / "bad.json", b"[1, 2")
    status, out, err = run_main(capsys, "analyze", str(loop_trace), str(bad))
    assert status == EXIT_OK
    assert out.startswith("torchtop · 1 trace file")
    assert err.splitlines() == [f"torchtop: skipped {bad}: truncated before its first whole event"]
    assert f"skipped {bad}" in out  # the report's notes name it too


def test_when_no_file_can_be_read_the_input_is_named_in_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    _write(folder / "a.json", b"")
    _write(folder / "b.json", b"[1, 2")
    status, out, err = run_main(capsys, "analyze", str(folder))
    assert status == EXIT_BAD_INPUT
    assert out == ""
    assert err == (
        f"torchtop: {folder}: none of its 2 trace files could be read ({folder / 'a.json'}: "
        "empty file; and 1 more)\n"
    )


def test_a_trace_with_an_empty_event_array_exits_2_without_a_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path / "no-events.json", b'{"traceEvents": []}')
    result = run_process("analyze", str(path))
    assert result.returncode == EXIT_BAD_INPUT
    assert "Traceback" not in result.stderr
    assert str(path) in result.stderr


def test_a_truncated_trace_is_analysed_and_named_on_stderr(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = json.dumps(document(two_step_loop())).encode()
    path = _write(tmp_path / "cut.json", doc[: len(doc) - 60])
    status, out, err = run_main(capsys, "analyze", str(path), "--format", "json")
    assert status == 0
    report = json.loads(out)
    assert report["traces"][0]["truncated"] is True
    assert any("truncated" in note for note in report["notes"])
    assert len(err.splitlines()) == 1
    assert str(path) in err
    assert "truncated" in err


def test_a_rule_comparing_a_text_metric_with_a_number_does_not_crash_analyze(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "rules"
    shutil.copytree(RULES_DIR, folder)
    (folder / "straggler-check.toml").write_text(
        'id = "straggler-check"\nparent = "communication"\ntitle = "t"\n'
        'when = "slowest_rank > 0.5"\nwhy = "Source: test."\n'
    )
    run = tmp_path / "run"
    run.mkdir()
    for rank in (0, 1):
        info = {"backend": "nccl", "rank": rank, "world_size": 2}
        write_json(run / f"rank{rank}.json", document(two_step_loop(), distributedInfo=info))
    status, _, err = run_main(
        capsys, "analyze", str(run), "--rules", str(folder), "--format", "json"
    )
    assert status in (0, EXIT_BAD_INPUT)
    assert len(err.splitlines()) <= 1


def test_usage_errors_exit_2_from_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["analyze"])
    assert exited.value.code == EXIT_BAD_INPUT
    assert "PATH" in capsys.readouterr().err


@pytest.mark.parametrize("verb", [["run"], ["demo"], ["attach", "1"]])
@pytest.mark.parametrize("value", ["0", "-3", "soon", "nan", "inf"])
def test_a_bad_for_is_one_line_naming_the_option(
    capsys: pytest.CaptureFixture[str], verb: list[str], value: str, tmp_path: Path
) -> None:
    command = ["--", sys.executable, "-c", "pass"] if verb == ["run"] else []
    status, out, err = run_main(
        capsys, *verb, "--headless", "--for", value, "--run-dir", str(tmp_path), *command
    )
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [
        f"torchtop: --for: {value!r} is not a positive number of seconds"
    ]
    assert not any(tmp_path.iterdir())  # nothing was started or recorded


def test_analyze_starts_no_blas_threads_and_leaves_the_environment_as_it_was(
    tmp_path: Path,
) -> None:
    """numpy's OpenBLAS would start a thread per core (and spin them) for an analysis that
    multiplies no matrices; `analyze` asks for one thread, and only while it runs."""
    path = write_json(tmp_path / "t.json", document(two_step_loop()))
    code = (
        "import os, sys\n"
        "from torchtop.cli import main\n"
        "assert main(['analyze', sys.argv[1], '--format', 'json']) == 0\n"
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'),"
        " file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    result = python_run(code, str(path), env=env)
    threads, variable = result.stderr.split()
    assert threads == "1"  # numpy was imported: its BLAS started no thread
    assert variable == "None"


def test_the_command_writes_the_whole_report_before_it_exits_without_finalizing(
    capsys: pytest.CaptureFixture[str], shared: Path
) -> None:
    """`torchtop analyze` ends with os._exit once the report is out: through a pipe, the report
    must still arrive whole, and the same as `main` gives in process."""
    trace = str(shared / RESNET_NW0)
    result = run_process("analyze", trace, "--format", "json")
    assert result.returncode == 0, result.stderr
    _, in_process, _ = run_main(capsys, "analyze", trace, "--format", "json")
    assert json.loads(result.stdout) == json.loads(in_process)
    # A reader that stops early (`| head`) ends the command quietly, with status 0.
    head = subprocess.run(
        f"{shlex.quote(sys.executable)} -m torchtop analyze {shlex.quote(trace)} | head -c 10",
        shell=True,
        capture_output=True,
        timeout=60,
    )
    assert head.stdout.startswith(b"torchtop")
    assert head.stderr == b""


def test_the_fast_exit_stops_an_early_reading_worker_nobody_took(
    shared: Path, tmp_path: Path
) -> None:
    """`analyze` forks its reading worker before anything else; if the command then ends
    (a bad rules folder, say) before the reader takes the worker over, the exit without
    Python's hooks must still stop it rather than leave it reading the 35 MB trace."""
    code = (
        "import sys\n"
        "from torchtop import cli\n"
        "from torchtop.traces import parallel\n"
        "parallel.start_early(sys.argv[1:])\n"
        "print(next(iter(parallel._EARLY.values())).worker.pid, flush=True)\n"
        "cli._exit_now(2)\n"
    )
    env = {**os.environ, "TORCHTOP_READ_WORKERS": "2"}
    # Into a file, not a pipe: a pipe would stay open (and `run` wait) while the worker lives.
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        status = subprocess.run(
            [sys.executable, "-c", code, str(shared / RESNET_NW0)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=60,
        ).returncode
    assert status == EXIT_BAD_INPUT, out.read_text()
    worker = int(out.read_text())
    with contextlib.suppress(psutil.NoSuchProcess):
        assert psutil.Process(worker).status() == psutil.STATUS_ZOMBIE


def test_ctrl_c_during_analyze_is_one_line_and_status_130(
    capsys: pytest.CaptureFixture[str], loop_trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("torchtop.sessions.offline.analyze_jobs", interrupted)
    status, out, err = run_main(capsys, "analyze", str(loop_trace))
    assert status == 130
    assert out == "" and err == "torchtop: interrupted\n"


@pytest.mark.parametrize(
    "verb", ["analyze", "run", "demo", "attach", "tune", "watch", "view", "rules", "diff"]
)
def test_every_verbs_help_ends_with_an_example_of_that_verb(
    capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    with pytest.raises(SystemExit):
        main([verb, "--help"])
    shown = capsys.readouterr().out
    examples = shown.split("examples:", 1)
    assert len(examples) == 2, shown
    assert f"torchtop {verb} " in examples[1]


def test_every_option_of_every_verb_says_what_it_does() -> None:
    # `analyze --format` was once listed in its help with no word on what it did.
    verbs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    silent = [
        f"{verb} {action.option_strings[-1]}"
        for verb, parser in verbs.choices.items()
        for action in parser._actions
        if action.option_strings and not action.help
    ]
    assert "analyze" in verbs.choices and silent == []


@pytest.mark.parametrize("verb", [["attach", "1"], ["watch", "x"]])
def test_for_says_that_watching_stops_not_the_job_where_the_job_goes_on(
    capsys: pytest.CaptureFixture[str], verb: list[str]
) -> None:
    with pytest.raises(SystemExit):
        main([verb[0], "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    said = shown.split("--for SECONDS", 2)[2].strip()
    assert said.startswith("stop watching after this long;"), said[:80]
    assert "goes on" in said[:80]


def test_analyse_is_the_same_verb_as_analyze(
    capsys: pytest.CaptureFixture[str], shared: Path
) -> None:
    assert main(["analyse", str(shared / RESNET_NW0), "--format", "json"]) == 0
    british = json.loads(capsys.readouterr().out)
    assert main(["analyze", str(shared / RESNET_NW0), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == british


@pytest.mark.parametrize(
    ("word", "hint"), [("anaylze", "did you mean 'analyze'?"), ("atach", "did you mean 'attach'?")]
)
def test_a_misspelt_verb_is_one_line_with_the_nearest_verb(
    capsys: pytest.CaptureFixture[str], word: str, hint: str
) -> None:
    assert main([word, "x"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.splitlines() == [f"torchtop: '{word}' is not a verb; {hint}"]


def test_a_word_far_from_every_verb_lists_the_verbs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.startswith("torchtop: 'frobnicate' is not a verb (the verbs: analyze, run")
    assert "analyse" not in err
