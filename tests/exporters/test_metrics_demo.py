"""`torchtop demo --headless --metrics`: scraped while the real demo job runs, end to end."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
from pathlib import Path

import pytest
from prometheus_client.samples import Sample

from tests.exporters.scrape import one, scrape, values
from torchtop.exporters.metrics_server import TOKEN_VARIABLE

TOKEN = "token-for-the-test"
URL_LINE = re.compile(r"torchtop: Prometheus metrics on (http://\S+)")
JOB_RATE = re.compile(r"^step \d+ .* ([\d.]+) steps/s$", re.MULTILINE)


def _url(process: subprocess.Popen[str], stderr: list[str]) -> tuple[str, threading.Thread]:
    """The endpoint the launcher announced, and the thread that keeps the rest of stderr (the
    job's own lines among it), so the pipe never fills: done once stderr is closed."""
    assert process.stderr is not None
    for line in process.stderr:
        stderr.append(line)
        found = URL_LINE.search(line)
        if found:
            reading = threading.Thread(
                target=lambda: stderr.extend(process.stderr or ()), daemon=True
            )
            reading.start()
            return found.group(1), reading
    raise AssertionError("".join(stderr))


def test_the_demo_is_scraped_while_it_runs_with_the_token_and_agrees_with_its_report(
    tmp_path: Path,
) -> None:
    report_path = tmp_path / "report.json"
    command = [
        *(sys.executable, "-m", "torchtop", "demo", "--headless", "--for", "20"),
        *("--metrics", "127.0.0.1:0", "--run-dir", str(tmp_path / "run")),
        *("--report", str(report_path), "--", "--latency-ms", "2"),
    ]
    env = {**os.environ, TOKEN_VARIABLE: TOKEN, "TORCHTOP_NODE": "node-a"}
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    stderr: list[str] = []
    last: list[Sample] = []
    try:
        url, reading = _url(process, stderr)
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(url)
        assert refused.value.code == 401
        while process.poll() is None:
            try:
                samples = scrape(url, TOKEN)
            except (urllib.error.URLError, ConnectionError):
                break  # the launcher closed the endpoint as it finished
            if values(samples, "torchtop_step_seconds_count"):
                last = samples
            time.sleep(1.0)
        # Stderr is read on by `reading` alone: `communicate` would take part of it.
        process.wait(timeout=120)
        reading.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, "".join(stderr)[-3000:]
    assert last, "no scrape carried step figures"
    report = json.loads(report_path.read_text())
    labels = {"run": "run", "node": "node-a", "rank": ""}
    assert one(last, "torchtop_rank_info", pid=str(report["source"]["pid"]), **labels) == 1
    assert one(last, "torchtop_step_seconds_count", **labels) <= report["steps"]["count"]
    # The last scrape is at most a tick older than the report, over many steps: close to it,
    # and close to the rate the job prints itself (steps since its loop began, over the time).
    rate = one(last, "torchtop_steps_per_second", **labels)
    assert rate == pytest.approx(report["steps"]["steps_per_s"], rel=0.25)
    said = "".join(stderr)  # the job's own stdout, on torchtop's stderr
    job_rates = [float(r) for r in JOB_RATE.findall(said)]
    assert job_rates, said[-3000:]
    assert rate == pytest.approx(job_rates[-1], rel=0.4)
    assert report["bottleneck"] == "dataloader"
    assert one(last, "torchtop_verdict", bottleneck="dataloader") == 1.0
    wait = one(last, "torchtop_dataloader_wait_ratio", **labels)
    assert wait == pytest.approx(report["metrics"]["dataloader_share"], abs=0.15)


def test_attach_serves_the_attached_process_under_its_pid(tmp_path: Path) -> None:
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    command = [
        *(sys.executable, "-m", "torchtop", "attach", str(target.pid), "--headless"),
        *("--for", "6", "--metrics", "127.0.0.1:0", "--run-dir", str(tmp_path / "attached")),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stderr: list[str] = []
    found: list[Sample] = []
    try:
        url, _ = _url(process, stderr)
        while process.poll() is None and not values(found, "torchtop_breakdown_ratio"):
            time.sleep(1.0)
            with contextlib.suppress(urllib.error.URLError, ConnectionError):
                found = scrape(url)
        process.communicate(timeout=60)
    finally:
        for started in (process, target):
            if started.poll() is None:
                started.kill()
            started.wait()
    assert process.returncode == 0, "".join(stderr)[-3000:]
    assert values(found, "torchtop_breakdown_ratio")
    pids = {s.labels["pid"] for s in found if s.name == "torchtop_rank_info"}
    assert pids == {str(target.pid)}
    assert not any("pid" in s.labels for s in found if s.name != "torchtop_rank_info")
    assert one(found, "torchtop_verdict", run="attached", bottleneck="unknown") == 1.0
