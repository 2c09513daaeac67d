"""What every endpoint of the launcher shares: its address, its token, its threaded server.

`--metrics` (Prometheus) and `--serve` (a node's records) both listen on `[HOST:]PORT`,
loopback by default. An address that is not loopback (every 127.0.0.0/8 address and ::1 are)
requires a bearer token: the endpoint's token variable when set (which also forces it on
loopback), else one generated here and printed once on stderr; a request without
`Authorization: Bearer <token>` gets 401. The decision is `requires_token`, a function of the
bound address alone, so it is tested without ever listening beyond loopback.

The server is the standard library's WSGI server with a thread per request, all daemon threads:
it lives in the launcher (never in the job), and a client that hangs holds only its own thread.
A port already taken, or an address that is not this machine's, is a one-line `InputError`
naming the option, raised before the job starts.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from torchtop.errors import InputError

DEFAULT_HOST = "127.0.0.1"
WsgiApp = WSGIApplication


@dataclass(frozen=True)
class Address:
    host: str
    port: int


@dataclass(frozen=True)
class Endpoint:
    """Which endpoint: its option (for errors) and the variable that holds its token."""

    option: str
    token_variable: str
    thread_name: str


def parse_address(text: str, option: str) -> Address:
    """`PORT`, `HOST:PORT` or `[IPV6]:PORT`; the host defaults to loopback."""
    host, _, port_text = text.rpartition(":")
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise InputError(option, f"{text!r} is not [HOST:]PORT (e.g. 9400 or 127.0.0.1:9400)")
    return Address(host, port)


def requires_token(ip: str) -> bool:
    """Whether a server bound to `ip` must ask for a token: unless it is loopback."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_loopback


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Requests are not news: nothing on the launcher's stderr for each one."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Server6(_Server):
    address_family = socket.AF_INET6


def with_bearer_token(app: WsgiApp, token: str) -> WsgiApp:
    """`app` behind `Authorization: Bearer <token>`; 401 without it."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if hmac.compare_digest(given, expected):
            return app(environ, start_response)
        start_response(
            "401 Unauthorized",
            [("Content-Type", "text/plain"), ("WWW-Authenticate", 'Bearer realm="torchtop"')],
        )
        return [b"torchtop: send Authorization: Bearer <token>\n"]

    return guarded


class HttpServer:
    """A running endpoint: where it listens, its token (None when open), `close` to stop it."""

    def __init__(
        self, server: _Server, token: str | None, generated: bool, thread_name: str
    ) -> None:
        self.server = server
        self.token = token
        self.generated = generated
        """Whether the token was made here (and so must be printed for the user)."""
        self.thread = threading.Thread(target=server.serve_forever, name=thread_name, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def token_for(ip: str, endpoint: Endpoint, env: Mapping[str, str]) -> tuple[str | None, bool]:
    """The token a server bound to `ip` asks for (None: open), and whether it was made here:
    the endpoint's variable when set, else a new one unless `ip` is loopback."""
    token = env.get(endpoint.token_variable) or None
    if token is None and requires_token(ip):
        return secrets.token_urlsafe(24), True
    return token, False


S = TypeVar("S", bound=HttpServer)


def listen(
    text: str,
    app: WsgiApp,
    endpoint: Endpoint,
    kind: type[S],
    env: Mapping[str, str] | None = None,
) -> S:
    """Serve `app` on `text` ([HOST:]PORT), behind a token where one is set or needed."""
    address = parse_address(text, endpoint.option)
    family, ip = _resolve(address, endpoint.option)
    token, generated = token_for(ip, endpoint, os.environ if env is None else env)
    if token is not None:
        app = with_bearer_token(app, token)
    server_class = _Server6 if family == socket.AF_INET6 else _Server
    try:
        server = server_class((ip, address.port), _QuietHandler)
    except OSError as exc:
        raise InputError(
            endpoint.option, f"cannot listen on {text}: {exc.strerror or exc}"
        ) from None
    server.set_app(app)
    return kind(server, token, generated, endpoint.thread_name)


def _resolve(address: Address, option: str) -> tuple[int, str]:
    """The address family and IP the host names (its first address)."""
    try:
        infos = socket.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputError(option, f"unknown host {address.host!r}: {exc.strerror}") from None
    family, _, _, _, sockaddr = infos[0]
    return int(family), str(sockaddr[0])
