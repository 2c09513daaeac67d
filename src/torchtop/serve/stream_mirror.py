"""`torchtop watch URL...`: pull each node's `--serve` stream into a local run folder.

The mirror is laid out as a run folder several launchers share (`DIR/nodes/<node>/...`), so it
is followed by the same readers as `watch RUN_DIR` and stays a run `analyze` reads afterwards.
Journals (`.jsonl`, logs) only grow: each poll appends the new whole lines. Every other file is
written whole by the launcher (renamed into place), so it is fetched whole when its size
changes and renamed into place here too: a reader never sees half a trace.

One daemon thread per node does the fetching, never the UI's: a node that hangs holds only its
own thread (and every request has a timeout). A node that stops answering keeps what was
received and is reported with when it was last seen; the others go on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from torchtop.errors import InputError
from torchtop.runs.identity import node_dir, safe_name

REQUEST_TIMEOUT_S = 5.0
POLL_S = 0.5
SILENT_S = 10.0
"""A node silent this long no longer holds the watch open (it may have died with its host)."""
APPENDED = (".jsonl", ".log")
REFUSED = "the stream refused the token (401): give --token or TORCHTOP_SERVE_TOKEN"


def check_url(url: str) -> str:
    """`url` as the base of a stream (`http://HOST:PORT`), or a one-line error naming it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise InputError(url, "not a --serve stream's address (http://HOST:PORT)")
    try:
        parts.port  # noqa: B018  # raises on a port that is not a number
    except ValueError:
        raise InputError(url, "not a --serve stream's address (http://HOST:PORT)") from None
    return f"{parts.scheme}://{parts.netloc}"


class Refused(Exception):
    """The node answered 401: the token is missing or wrong."""


@dataclass
class FeedStatus:
    url: str
    name: str | None = None
    answering: bool | None = None
    """None until the first request has been answered or has failed."""
    last_seen_epoch_s: float | None = None
    error: str | None = None
    complete: bool = False
    """Its job has ended and every file has been fetched to its end."""
    silent_since_s: float | None = None
    """The monotonic time it stopped answering."""


class NodeFeed:
    """One node's stream, mirrored into `DIR/nodes/<its name>/`."""

    def __init__(self, url: str, token: str | None) -> None:
        self.status = FeedStatus(url)
        self.token = token
        self.folder: Path | None = None
        self.appended: dict[str, int] = {}
        self.whole: dict[str, int] = {}

    def _get(self, route: str) -> tuple[bytes, int | None]:
        request = urllib.request.Request(self.status.url + route)
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                size = response.headers.get("X-Torchtop-Size")
                return response.read(), int(size) if size is not None else None
        except urllib.error.HTTPError as exc:
            if exc.code == 401:
                raise Refused(REFUSED) from None
            raise

    def node_name(self) -> str:
        body, _ = self._get("/v1/node")
        document: dict[str, object] = json.loads(body)
        return safe_name(str(document["node"]))

    def poll(self) -> None:
        """Fetch what is new; the caller decides what a failure means."""
        assert self.folder is not None
        body, _ = self._get("/v1/files")
        files: dict[str, int] = json.loads(body)["files"]
        for relative, size in files.items():
            if relative.endswith(APPENDED):
                self._append(relative, size)
            elif self.whole.get(relative) != size:
                self._fetch_whole(relative, size)
        fetched = {**self.whole, **self.appended}
        self.status.complete = "exit.json" in files and all(
            fetched.get(p, -1) >= size for p, size in files.items()
        )

    def _chunk(self, relative: str, offset: int) -> tuple[bytes, int | None]:
        return self._get(f"/v1/file?path={quote(relative)}&offset={offset}")

    def _append(self, relative: str, size: int) -> None:
        assert self.folder is not None
        have = self.appended.get(relative, 0)
        target = self.folder / relative
        if size < have or not target.exists():
            have = 0  # rewritten from the start, or not begun here
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("ab" if have else "wb") as out:
            while have < size:
                data, _ = self._chunk(relative, have)
                whole = data[: data.rfind(b"\n") + 1]
                if not whole:
                    break  # a line still being written: the rest of it next time
                out.write(whole)
                out.flush()
                have += len(whole)
        self.appended[relative] = have

    def _fetch_whole(self, relative: str, size: int) -> None:
        assert self.folder is not None
        target = self.folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        got, total = 0, size
        with partial.open("wb") as out:
            while got < total:
                data, reported = self._chunk(relative, got)
                total = reported if reported is not None else total
                if not data:
                    break
                out.write(data)
                got += len(data)
        os.replace(partial, target)
        self.whole[relative] = got


class StreamMirror:
    """Every node's feed, each followed on a thread of its own into `root`."""

    def __init__(self, urls: list[str], root: Path, token: str | None) -> None:
        self.root = root
        self.feeds = [NodeFeed(url, token) for url in urls]
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def connect(self, wait_s: float = 10.0) -> list[FeedStatus]:
        """Ask every node its name, all at once (retrying for up to `wait_s` while one does not
        answer yet, so one that hangs delays no other); the ones that never answered. A
        one-line error naming the URL when none answered."""
        deadline = time.monotonic() + wait_s
        askers = [
            threading.Thread(target=self._ask, args=(feed, deadline), daemon=True)
            for feed in self.feeds
        ]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join()
        silent = [f.status for f in self.feeds if f.folder is None]
        if len(silent) == len(self.feeds):
            raise InputError(silent[0].url, silent[0].error or "no answer")
        return silent

    def _ask(self, feed: NodeFeed, deadline: float) -> None:
        while not self._name(feed) and feed.status.error != REFUSED:
            if time.monotonic() >= deadline:
                return
            time.sleep(POLL_S)

    def _name(self, feed: NodeFeed) -> bool:
        try:
            name = feed.node_name()
        except (OSError, ValueError, KeyError, Refused) as exc:
            self._failed(feed, exc)
            return False
        with self.lock:
            taken = {f.status.name for f in self.feeds if f is not feed}
            if name in taken:
                name = safe_name(f"{name}-{urlsplit(feed.status.url).port}")
            feed.status.name = name
            feed.folder = node_dir(self.root, name)
        feed.folder.mkdir(parents=True, exist_ok=True)
        self._seen(feed)
        return True

    def start(self) -> None:
        for feed in self.feeds:
            thread = threading.Thread(
                target=self._follow, args=(feed,), name="torchtop-fetch", daemon=True
            )
            thread.start()
            self.threads.append(thread)

    def _follow(self, feed: NodeFeed) -> None:
        while not self.stop_event.is_set() and not feed.status.complete:
            try:
                if feed.folder is not None or self._name(feed):
                    feed.poll()
                    self._seen(feed)
            except (OSError, ValueError, KeyError, Refused) as exc:
                self._failed(feed, exc)
            self.stop_event.wait(POLL_S)

    def _seen(self, feed: NodeFeed) -> None:
        with self.lock:
            status = feed.status
            status.answering, status.error, status.silent_since_s = True, None, None
            status.last_seen_epoch_s = time.time()

    def _failed(self, feed: NodeFeed, exc: BaseException) -> None:
        with self.lock:
            status = feed.status
            if status.answering is not False or status.silent_since_s is None:
                status.silent_since_s = time.monotonic()
            status.answering = False
            status.error = str(exc) if isinstance(exc, Refused) else _reason(exc)

    def statuses(self) -> list[FeedStatus]:
        with self.lock:
            return [dataclasses.replace(feed.status) for feed in self.feeds]

    def done(self) -> bool:
        """Whether nothing more will come: every node complete, or silent for `SILENT_S`."""
        now = time.monotonic()
        return all(
            s.complete or (s.silent_since_s is not None and now - s.silent_since_s >= SILENT_S)
            for s in self.statuses()
        )

    def close(self) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout=REQUEST_TIMEOUT_S + 1)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return f"no answer: {exc.reason}"
    return f"no answer: {exc}"
