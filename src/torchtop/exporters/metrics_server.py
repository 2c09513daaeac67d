"""`--metrics [HOST:]PORT`: serve a registry of our own over HTTP for Prometheus to scrape.

The address, the token and the server are `serve.http_server`'s, shared with `--serve`: loopback
by default, and any other address requires a bearer token, `TORCHTOP_METRICS_TOKEN` when set
(which also forces it on loopback), else one generated and printed once on stderr. Prometheus
sends it with `authorization: {credentials: ...}` in its scrape config.
"""

from __future__ import annotations

import sys
from typing import TextIO

from prometheus_client import make_wsgi_app
from prometheus_client.registry import Collector

from torchtop.serve import http_server
from torchtop.serve.http_server import Address, Endpoint, HttpServer, requires_token

OPTION = "--metrics"
TOKEN_VARIABLE = "TORCHTOP_METRICS_TOKEN"
ENDPOINT = Endpoint(OPTION, TOKEN_VARIABLE, "torchtop-metrics")

__all__ = ["Address", "MetricsServer", "parse_address", "requires_token", "serve_metrics"]


class MetricsServer(HttpServer):
    """A running metrics endpoint: its URL, and `close` to stop it."""

    @property
    def url(self) -> str:
        return f"{self.base_url}/metrics"


def parse_address(text: str, option: str = OPTION) -> Address:
    return http_server.parse_address(text, option)


def serve_metrics(
    text: str,
    registry: Collector,
    env: dict[str, str] | None = None,
    stream: TextIO = sys.stderr,
) -> MetricsServer:
    """Listen on `text` ([HOST:]PORT) and serve `registry`; say where (and the token) once."""
    running = http_server.listen(text, make_wsgi_app(registry), ENDPOINT, MetricsServer, env)
    print(f"torchtop: Prometheus metrics on {running.url}", file=stream)
    if running.generated:
        print(f"torchtop: metrics token (Authorization: Bearer ...): {running.token}", file=stream)
    stream.flush()
    return running
