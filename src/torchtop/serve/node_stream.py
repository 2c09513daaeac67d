"""`--serve [HOST:]PORT`: a launcher serves its node's run folder over HTTP, read-only.

For clusters without a shared filesystem: `torchtop watch http://node-a:PORT ...` pulls each
node's records into a local mirror (`serve.stream_mirror`). Three requests (docs/multi-node.md):

- `GET /v1/node`: the node's name and its `run.json` (null until written);
- `GET /v1/files`: the relative path and size of every file of the node's folder;
- `GET /v1/file?path=P&offset=N`: the file's bytes from N (at most `CHUNK_BYTES`).

The journals are append-only and every other file is written whole (renamed into place), so a
reader asks only for what is new. Hidden names (a trace or record still being written) and the
window requests are not listed; a path outside the folder is refused (403). The address and the
token are `serve.http_server`'s: loopback unless the user names an address, and then a token.

What each client has read is kept, so that after the job ends the launcher can wait until a
watcher has every record (`NodeStream.linger`) instead of taking the last ones with it.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO
from urllib.parse import parse_qs
from wsgiref.types import StartResponse, WSGIEnvironment

from torchtop.serve import http_server
from torchtop.serve.http_server import Endpoint, HttpServer

OPTION = "--serve"
TOKEN_VARIABLE = "TORCHTOP_SERVE_TOKEN"
ENDPOINT = Endpoint(OPTION, TOKEN_VARIABLE, "torchtop-serve")
CHUNK_BYTES = 8 << 20
LINGER_S = 30.0
UNLISTED = frozenset({"requests"})


def listed_files(root: Path) -> dict[str, int]:
    """Every file a watcher may fetch, by path relative to `root`, with its size now."""
    files: dict[str, int] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] in UNLISTED or any(p.startswith(".") for p in relative.parts):
            continue
        try:
            if path.is_file():
                files[relative.as_posix()] = path.stat().st_size
        except OSError:
            continue  # renamed or removed between the listing and the look
    return files


def confined(root: Path, relative: str) -> Path | None:
    """`relative` inside `root`, or None for anything that would leave it (or is hidden)."""
    parts = Path(relative).parts
    if not relative or Path(relative).is_absolute() or any(p.startswith(".") for p in parts):
        return None
    path = (root / relative).resolve()
    return path if path.is_relative_to(root.resolve()) else None


class NodeStream:
    """The WSGI app for one node's folder, and what its clients have read of it."""

    def __init__(self, root: Path, node: str) -> None:
        self.root = root
        self.node = node
        self.read_to: dict[str, int] = {}
        """How far into each file some client has read."""
        self.connected = False
        self.lock = threading.Lock()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        with self.lock:
            self.connected = True
        route = str(environ.get("PATH_INFO", ""))
        query = parse_qs(str(environ.get("QUERY_STRING", "")))
        if route == "/v1/node":
            return _json(start_response, {"node": self.node, "run": self._run_record()})
        if route == "/v1/files":
            return _json(start_response, {"node": self.node, "files": listed_files(self.root)})
        if route == "/v1/file":
            return self._file(start_response, query)
        return _status(start_response, "404 Not Found", "no such request\n")

    def _run_record(self) -> object:
        try:
            document: object = json.loads((self.root / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return document

    def _file(self, start_response: StartResponse, query: dict[str, list[str]]) -> list[bytes]:
        relative = query.get("path", [""])[0]
        path = confined(self.root, relative)
        if path is None:
            return _status(start_response, "403 Forbidden", "path outside the node's folder\n")
        try:
            offset = max(0, int(query.get("offset", ["0"])[0]))
        except ValueError:
            return _status(start_response, "400 Bad Request", "offset is not a number\n")
        try:
            with path.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(offset)
                data = handle.read(CHUNK_BYTES)
        except OSError:
            return _status(start_response, "404 Not Found", "no such file\n")
        with self.lock:
            end = offset + len(data)
            self.read_to[relative] = max(end, self.read_to.get(relative, 0))
        headers = [("Content-Type", "application/octet-stream"), ("X-Torchtop-Size", str(size))]
        start_response("200 OK", headers)
        return [data]

    def unread(self) -> list[str]:
        """The files some client has not yet read to their end."""
        with self.lock:
            read = dict(self.read_to)
        return [p for p, size in listed_files(self.root).items() if read.get(p, 0) < size]

    def linger(
        self, limit_s: float = LINGER_S, stream: TextIO = sys.stderr, poll_s: float = 0.2
    ) -> None:
        """After the job: keep serving until a watcher has read every file to its end, for at
        most `limit_s`, and only if a watcher ever connected (nobody may be listening)."""
        if not self.connected or not self.unread():
            return
        print(
            f"torchtop: the job has ended; serving its last records to the watcher "
            f"(up to {limit_s:.0f} s)",
            file=stream,
            flush=True,
        )
        deadline = time.monotonic() + limit_s
        while self.unread() and time.monotonic() < deadline:
            time.sleep(poll_s)
        left = self.unread()
        if left:
            print(f"torchtop: stopped serving; {len(left)} file(s) not fetched", file=stream)


def serve_node(
    text: str,
    root: Path,
    node: str,
    env: dict[str, str] | None = None,
    stream: TextIO = sys.stderr,
) -> tuple[HttpServer, NodeStream]:
    """Listen on `text` ([HOST:]PORT) and serve `root`; say where (and the token) once."""
    app = NodeStream(root, node)
    server = http_server.listen(text, app, ENDPOINT, HttpServer, env)
    print(f"torchtop: serving node {node}'s records on {server.base_url}", file=stream)
    if server.generated:
        print(f"torchtop: serve token (Authorization: Bearer ...): {server.token}", file=stream)
    stream.flush()
    return server, app


def _json(start_response: StartResponse, document: object) -> list[bytes]:
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(document).encode()]


def _status(start_response: StartResponse, status: str, text: str) -> list[bytes]:
    start_response(status, [("Content-Type", "text/plain")])
    return [text.encode()]
