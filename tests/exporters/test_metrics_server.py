"""The metrics endpoint: its address, the token off loopback, bind errors, and the node name."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric

from tests.exporters.scrape import one, scrape
from torchtop.errors import InputError
from torchtop.exporters.metrics_server import (
    TOKEN_VARIABLE,
    Address,
    MetricsServer,
    parse_address,
    requires_token,
    serve_metrics,
)
from torchtop.runs.node import node_name


class _OneGauge:
    def collect(self) -> list[Metric]:
        gauge = GaugeMetricFamily("torchtop_test_value", "a test value", labels=["run"])
        gauge.add_metric(["r"], 4.5)
        return [gauge]


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    registry.register(_OneGauge())
    return registry


@pytest.fixture
def guarded() -> Iterator[MetricsServer]:
    stream = io.StringIO()
    server = serve_metrics("127.0.0.1:0", _registry(), {TOKEN_VARIABLE: "s3cret"}, stream)
    # A token the user chose is never printed.
    assert "s3cret" not in stream.getvalue()
    yield server
    server.close()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9400", Address("127.0.0.1", 9400)),
        ("127.0.0.2:0", Address("127.0.0.2", 0)),
        ("node-a:9400", Address("node-a", 9400)),
        ("[::1]:9400", Address("::1", 9400)),
    ],
)
def test_an_address_is_a_port_with_an_optional_host_that_defaults_to_loopback(
    text: str, expected: Address
) -> None:
    assert parse_address(text) == expected


@pytest.mark.parametrize("text", ["", "http", "127.0.0.1:", "127.0.0.1:70000", "9400x"])
def test_a_malformed_address_is_a_one_line_error_naming_the_option(text: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_address(text)
    assert caught.value.subject == "--metrics"
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "ip", ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "::ffff:127.0.0.1"]
)
def test_every_loopback_address_serves_without_a_token(ip: str) -> None:
    assert not requires_token(ip)


@pytest.mark.parametrize(
    "ip", ["0.0.0.0", "::", "10.0.0.5", "192.168.1.20", "fe80::1%eth0", "::ffff:10.0.0.1"]
)
def test_any_other_address_requires_a_token(ip: str) -> None:
    assert requires_token(ip)


def test_a_scrape_without_the_token_is_refused_with_401(guarded: MetricsServer) -> None:
    for token in (None, "wrong"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(guarded.url, token)
        assert refused.value.code == 401


def test_a_scrape_with_the_token_gets_the_metrics(guarded: MetricsServer) -> None:
    assert one(scrape(guarded.url, "s3cret"), "torchtop_test_value", run="r") == 4.5


def test_loopback_without_a_token_variable_serves_openly_and_says_where() -> None:
    stream = io.StringIO()
    server = serve_metrics("127.0.0.1:0", _registry(), {}, stream)
    try:
        assert server.token is None
        assert stream.getvalue().splitlines() == [f"torchtop: Prometheus metrics on {server.url}"]
        assert one(scrape(server.url), "torchtop_test_value", run="r") == 4.5
    finally:
        server.close()


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


def test_a_port_already_taken_is_an_input_error_naming_the_option(taken_port: int) -> None:
    with pytest.raises(InputError) as caught:
        serve_metrics(f"127.0.0.1:{taken_port}", _registry(), {}, io.StringIO())
    assert caught.value.subject == "--metrics"
    assert "cannot listen on" in caught.value.problem


def test_run_with_a_taken_port_says_so_in_one_line_and_starts_no_job(
    tmp_path: Path, taken_port: int
) -> None:
    run_dir = tmp_path / "r"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "torchtop", "run", "--headless"),
            *("--metrics", f"127.0.0.1:{taken_port}", "--run-dir", str(run_dir)),
            *("--", sys.executable, "-c", "print('ran')"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"torchtop: --metrics: cannot listen on 127.0.0.1:{taken_port}"
    ), result.stderr
    assert "ran" not in result.stdout
    assert not run_dir.exists()


def test_the_node_is_torchtop_node_when_set_and_the_hostname_otherwise() -> None:
    assert node_name({"TORCHTOP_NODE": "node-b"}) == "node-b"
    assert node_name({"TORCHTOP_NODE": "  "}) == socket.gethostname()
    assert node_name({}) == socket.gethostname()
