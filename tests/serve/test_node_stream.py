"""`--serve` and its mirror, against a real server on a loopback address of its own: what a
node's folder lists, what a watcher may fetch (never outside the folder), the token, and the
mirror that keeps only whole lines and whole files."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.assess.test_nodes import analyzed, node
from torchtop.errors import InputError
from torchtop.jobs.records import write_exit_record
from torchtop.serve.http_server import HttpServer, token_for
from torchtop.serve.node_stream import ENDPOINT, TOKEN_VARIABLE, NodeStream, serve_node
from torchtop.serve.stream_mirror import REFUSED, StreamMirror, check_url

TORCHTOP = [sys.executable, "-m", "torchtop"]


def node_folder(root: Path) -> Path:
    (root / "events").mkdir(parents=True)
    (root / "traces").mkdir()
    (root / "requests").mkdir()
    (root / "run.json").write_text('{"kind": "run", "node": "a"}\n')
    (root / "events" / "agent-7.jsonl").write_text('{"kind": "hello"}\n{"kind": "st')
    (root / "traces" / "w.1.pt.trace.json.gz").write_bytes(b"\x1f\x8b" + bytes(range(256)) * 40)
    (root / "traces" / ".w.2.pt.trace.json.gz.partial").write_bytes(b"half")
    (root / "requests" / "window").write_text("{}")
    return root


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[HttpServer, NodeStream, Path]]:
    root = node_folder(tmp_path / "node")
    (tmp_path / "secret.txt").write_text("not the node's")
    server, stream = serve_node("127.0.0.2:0", root, "a", {}, io.StringIO())
    yield server, stream, root
    server.close()


def get(url: str, token: str | None = None) -> bytes:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        body: bytes = response.read()
        return body


def test_the_listing_names_every_finished_file_with_its_size_and_nothing_hidden(
    served: tuple[HttpServer, NodeStream, Path],
) -> None:
    server, _, root = served
    listing = json.loads(get(server.base_url + "/v1/files"))
    assert listing["node"] == "a"
    assert listing["files"] == {
        "events/agent-7.jsonl": (root / "events" / "agent-7.jsonl").stat().st_size,
        "run.json": (root / "run.json").stat().st_size,
        "traces/w.1.pt.trace.json.gz": 2 + 256 * 40,
    }
    node = json.loads(get(server.base_url + "/v1/node"))
    assert node == {"node": "a", "run": {"kind": "run", "node": "a"}}


def test_a_file_is_fetched_from_an_offset_so_a_reader_asks_only_for_what_is_new(
    served: tuple[HttpServer, NodeStream, Path],
) -> None:
    server, _, _ = served
    tail = get(server.base_url + "/v1/file?path=events/agent-7.jsonl&offset=18")
    assert tail == b'{"kind": "st'


@pytest.mark.parametrize(
    "path", ["../secret.txt", "events/../../secret.txt", "/etc/passwd", ".hidden", "%2e%2e/x"]
)
def test_a_path_outside_the_node_folder_is_refused(
    served: tuple[HttpServer, NodeStream, Path], path: str
) -> None:
    server, _, _ = served
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(f"{server.base_url}/v1/file?path={path}&offset=0")
    assert refused.value.code == 403


def test_a_link_that_leads_out_of_the_folder_is_refused(
    served: tuple[HttpServer, NodeStream, Path],
) -> None:
    server, _, root = served
    (root / "events" / "out.jsonl").symlink_to(root.parent / "secret.txt")
    with pytest.raises(urllib.error.HTTPError) as refused:
        get(f"{server.base_url}/v1/file?path=events/out.jsonl&offset=0")
    assert refused.value.code == 403


def test_a_request_without_the_token_gets_401_and_with_it_the_records(tmp_path: Path) -> None:
    root = node_folder(tmp_path / "node")
    stream = io.StringIO()
    server, _ = serve_node("127.0.0.2:0", root, "a", {TOKEN_VARIABLE: "s3cret"}, stream)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            get(server.base_url + "/v1/files")
        assert refused.value.code == 401
        with pytest.raises(urllib.error.HTTPError):
            get(server.base_url + "/v1/files", token="wrong")
        assert json.loads(get(server.base_url + "/v1/node", token="s3cret"))["node"] == "a"
    finally:
        server.close()
    assert "s3cret" not in stream.getvalue()  # a token the user chose is never printed


@pytest.mark.parametrize("ip", ["10.0.0.5", "0.0.0.0", "192.168.1.20", "::"])
def test_serving_beyond_loopback_without_a_token_makes_one_and_never_serves_openly(
    ip: str,
) -> None:
    token, generated = token_for(ip, ENDPOINT, {})
    assert token and generated
    assert token_for(ip, ENDPOINT, {TOKEN_VARIABLE: "mine"}) == ("mine", False)
    assert token_for("127.0.0.3", ENDPOINT, {}) == (None, False)


def test_the_mirror_keeps_whole_lines_and_whole_files_and_fetches_the_rest_later(
    served: tuple[HttpServer, NodeStream, Path], tmp_path: Path
) -> None:
    server, stream, root = served
    mirror = StreamMirror([server.base_url], tmp_path / "mirror", None)
    assert mirror.connect(wait_s=5) == []
    feed = mirror.feeds[0]
    feed.poll()
    copy = tmp_path / "mirror" / "nodes" / "a"
    assert (copy / "events" / "agent-7.jsonl").read_text() == '{"kind": "hello"}\n'
    trace = "traces/w.1.pt.trace.json.gz"
    assert (copy / trace).read_bytes() == (root / trace).read_bytes()
    assert not (copy / "traces" / ".w.2.pt.trace.json.gz.partial").exists()
    assert not feed.status.complete  # no exit.json yet, and half a line held back

    with (root / "events" / "agent-7.jsonl").open("a") as journal:
        journal.write('ep"}\n')
    (root / "exit.json").write_text('{"how": "exited"}\n')
    feed.poll()
    assert (copy / "events" / "agent-7.jsonl").read_text() == (
        root / "events" / "agent-7.jsonl"
    ).read_text()
    assert feed.status.complete and stream.unread() == []


def test_the_launcher_lingers_only_while_a_watcher_that_connected_has_records_to_fetch(
    served: tuple[HttpServer, NodeStream, Path], tmp_path: Path
) -> None:
    server, stream, _ = served
    said = io.StringIO()
    stream.linger(limit_s=60, stream=said)
    assert said.getvalue() == ""  # nobody ever connected: nobody to wait for

    mirror = StreamMirror([server.base_url], tmp_path / "mirror", None)
    mirror.connect(wait_s=5)
    fetching = threading.Timer(0.5, mirror.feeds[0].poll)
    fetching.start()
    stream.linger(limit_s=60, stream=said, poll_s=0.05)
    fetching.join()
    assert "serving its last records" in said.getvalue()
    assert "not fetched" not in said.getvalue()
    assert stream.unread() == []


@pytest.mark.parametrize(
    "url", ["ftp://node-a:9400", "http://", "http://node-a:port", "http://a:1/x"]
)
def test_a_url_that_is_not_a_stream_is_a_one_line_error_naming_it(url: str) -> None:
    with pytest.raises(InputError) as error:
        check_url(url)
    assert url in str(error.value)


def test_watch_without_the_token_exits_2_naming_the_url(tmp_path: Path) -> None:
    root = node_folder(tmp_path / "node")
    server, _ = serve_node("127.0.0.3:0", root, "a", {TOKEN_VARIABLE: "s3cret"}, io.StringIO())
    env = {k: v for k, v in os.environ.items() if k != TOKEN_VARIABLE}
    try:
        watched = subprocess.run(
            [*TORCHTOP, "watch", server.base_url, "--headless", "--for", "5",
             "--run-dir", str(tmp_path / "mirror")],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
    finally:
        server.close()
    assert watched.returncode == 2
    lines = watched.stderr.strip().splitlines()
    assert len(lines) == 1 and server.base_url in lines[0] and "401" in lines[0]
    assert REFUSED.split(":")[0] in lines[0]


def test_watch_of_a_node_that_never_answers_exits_2_naming_the_url(tmp_path: Path) -> None:
    server, _ = serve_node("127.0.0.3:0", node_folder(tmp_path / "node"), "a", {}, io.StringIO())
    url = server.base_url
    server.close()  # nothing listens there now
    watched = subprocess.run(
        [*TORCHTOP, "watch", url, "--headless", "--run-dir", str(tmp_path / "mirror")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert watched.returncode == 2
    lines = watched.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "no answer" in lines[0]


def test_the_stream_and_its_mirror_import_neither_torch_nor_textual() -> None:
    probe = (
        "import sys, torchtop.serve.node_stream, torchtop.serve.stream_mirror, "
        "torchtop.sessions.streams; print('torch' in sys.modules, 'textual' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "False False", result.stderr


def test_a_node_that_hangs_is_reported_silent_while_the_other_is_mirrored(
    served: tuple[HttpServer, NodeStream, Path], tmp_path: Path
) -> None:
    server, _, root = served
    with (root / "events" / "agent-7.jsonl").open("a") as journal:
        journal.write('ep"}\n')
    (root / "exit.json").write_text('{"how": "exited"}\n')
    with socket.socket() as hung:  # accepts connections (the kernel does) and never answers
        hung.bind(("127.0.0.3", 0))
        hung.listen(8)
        hung_url = f"http://127.0.0.3:{hung.getsockname()[1]}"
        mirror = StreamMirror([hung_url, server.base_url], tmp_path / "mirror", None)
        silent = mirror.connect(wait_s=1)
        assert [s.url for s in silent] == [hung_url]
        mirror.start()
        try:
            give_up = time.monotonic() + 60  # a guard against hanging, not a timing
            while not mirror.statuses()[1].complete and time.monotonic() < give_up:
                time.sleep(0.1)  # the real node is followed to its end meanwhile
            statuses = {s.url: s for s in mirror.statuses()}
        finally:
            mirror.close()
    assert statuses[hung_url].answering is False and statuses[hung_url].last_seen_epoch_s is None
    assert "timed out" in str(statuses[hung_url].error)
    assert statuses[server.base_url].answering is True
    assert (tmp_path / "mirror" / "nodes" / "a" / "exit.json").is_file()


def watch_two_served_nodes(
    run: Path, cpu_pcts: tuple[float, float], env: dict[str, str], *options: str
) -> subprocess.CompletedProcess[str]:
    """Record nodes a (ranks 0, 1) and b (ranks 2, 3) to their end under `run`, serve each on a
    loopback address of its own, and run `torchtop watch --headless` on the two streams."""
    for (name, ranks), cpu in zip((("a", (0, 1)), ("b", (2, 3))), cpu_pcts, strict=True):
        write_exit_record(node(run, name, ranks, cpu_pct=cpu).layout, "exited", 0)
    servers = [
        serve_node(f"{ip}:0", run / "nodes" / name, name, env, io.StringIO())[0]
        for ip, name in (("127.0.0.2", "a"), ("127.0.0.3", "b"))
    ]
    try:
        return subprocess.run(
            [*TORCHTOP, "watch", *(s.base_url for s in servers), "--headless", "--for", "120",
             *options],
            capture_output=True, text=True, timeout=150,
        )  # fmt: skip
    finally:
        for server in servers:
            server.close()


def test_watch_with_the_token_follows_recorded_nodes_to_their_end_as_analyze_reads_them(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    report_file, mirror = tmp_path / "watched.json", tmp_path / "mirror"
    watched = watch_two_served_nodes(
        run, (20.0, 80.0), {TOKEN_VARIABLE: "s3cret"},
        "--token", "s3cret", "--report", str(report_file), "--run-dir", str(mirror),
    )  # fmt: skip
    assert watched.returncode == 0, watched.stderr
    report = json.loads(report_file.read_text())
    assert [(r["rank"], r["node"]) for r in report["ranks"]] == [
        (0, "a"), (1, "a"), (2, "b"), (3, "b"),
    ]  # fmt: skip
    # The counters the nodes recorded, through the streams.
    assert [(n["name"], n["cpu_mean_pct"], n["ended"]) for n in report["nodes"]] == [
        ("a", 20.0, "exited"), ("b", 80.0, "exited"),
    ]  # fmt: skip
    assert all(n["answering"] is True and n["last_seen"] for n in report["nodes"])
    # Nothing lost: each rank's steps as `analyze` counts them in the served folders.
    steps = {r["rank"]: r["steps"]["count"] for r in analyzed(run)["ranks"]}
    assert sorted(steps) == [0, 1, 2, 3] and all(steps.values())
    assert {r["rank"]: r["steps"]["count"] for r in report["ranks"]} == steps
    assert {r["rank"]: r["steps"]["count"] for r in analyzed(mirror)["ranks"]} == steps


def test_watch_of_streams_writes_tensorboard_runs_per_rank_and_prints_the_json_report(
    tmp_path: Path,
) -> None:
    from tests.exporters.test_tensorboard import read

    board, mirror = tmp_path / "board", tmp_path / "mirror"
    watched = watch_two_served_nodes(
        tmp_path / "run", (50.0, 50.0), {},
        "--run-dir", str(mirror), "--format", "json", "--tensorboard", str(board),
    )  # fmt: skip
    assert watched.returncode == 0, watched.stderr
    report = json.loads(watched.stdout)  # stdout is the JSON report alone
    assert [(r["rank"], r["node"]) for r in report["ranks"]] == [
        (0, "a"), (1, "a"), (2, "b"), (3, "b"),
    ]  # fmt: skip
    assert sorted(p.name for p in board.iterdir()) == ["job", "rank0", "rank1", "rank2", "rank3"]
    for entry in report["ranks"]:
        walls = read(board / f"rank{entry['rank']}").Scalars("step/wall_ms")
        # Every step the report counted has its wall in the rank's TensorBoard run.
        assert len(walls) >= entry["steps"]["count"] > 0
