"""Prometheus metrics of one launcher's node, rebuilt from each tick of the live view.

`snapshot_families` maps a tick's `Snapshot` (the report, the verdict shown, the run state's
newest GPU sample) to metric families; `RunMetrics` is the collector that a registry of our own
serves. Each tick `publish` builds the families once and swaps the list in, so a scrape reads a
finished list: it never touches the run state the tick thread is changing, never waits on the
monitor's lock, and a slow scraper costs the job nothing.

Names follow Prometheus's conventions: base units in the name (`_seconds`, `_bytes`, `_watts`,
`_celsius`), shares of 0-1 as `_ratio`, and no `_total`, since nothing here is a counter but the
step summary's `_count`. The run folder's name is the `run` label, not `job`: Prometheus sets
`job` and `instance` on every scraped series itself, and a `job` label of ours would come out
renamed `exported_job`. What was not measured is absent, never 0.

A rank's series are keyed by run, node and rank, not by its pid: a rank its launcher restarts
(a new pid) goes on in the same series, and a pid label would make every restart and relaunch
a new series without bound. The pid is told by an info metric instead, `torchtop_rank_info`
(value 1, the pid as a label; OpenMetrics' `info` type), to join on where a query needs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.core import (
    GaugeMetricFamily,
    InfoMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from torchtop.analysis.metric_names import CLASSES
from torchtop.assess.snapshot import Snapshot
from torchtop.model.analysis import Metrics, RankAnalysis
from torchtop.model.report import RankReport, Report
from torchtop.report.contract import BREAKDOWN_KEYS, steps_per_s
from torchtop.runs.records import GpuDevice
from torchtop.runs.state import RunState

RUN_LABELS = ("run", "node")
RANK_LABELS = (*RUN_LABELS, "rank")
INFO_SUFFIX = "_info"
GPU_LABELS = (*RUN_LABELS, "gpu")
VERDICTS = (*CLASSES, "unknown")


@dataclass(frozen=True)
class MetricSpec:
    kind: str
    """gauge | summary | info"""
    labels: tuple[str, ...]
    help: str


METRICS: dict[str, MetricSpec] = {
    "torchtop_step_seconds": MetricSpec(
        "summary",
        (*RANK_LABELS, "quantile"),
        "Step wall time of the watched period after warm-up: quantile 0.5 and 0.95; _sum over "
        "_count is the mean, _count the steps counted.",
    ),
    "torchtop_steps_per_second": MetricSpec(
        "gauge", RANK_LABELS, "Steps over the time they took, the watched period's rate."
    ),
    "torchtop_breakdown_ratio": MetricSpec(
        "gauge",
        (*RANK_LABELS, "category"),
        "Share of step time (0-1) per category, as the report's breakdown; they add up to 1.",
    ),
    "torchtop_dataloader_wait_ratio": MetricSpec(
        "gauge", RANK_LABELS, "Share of the recent steps' time spent waiting on the DataLoader."
    ),
    "torchtop_mfu": MetricSpec(
        "gauge",
        RANK_LABELS,
        "Model FLOPs utilisation (0-1): the modelled FLOPs per step of the newest profiler "
        "windows over the step time and the device's peak (a CPU's measured peak).",
    ),
    "torchtop_rank_info": MetricSpec(
        "info",
        (*RANK_LABELS, "pid"),
        "1 for each rank watched now, with its process id: a restarted rank's new pid replaces "
        "the old, its other series go on.",
    ),
    "torchtop_verdict": MetricSpec(
        "gauge",
        (*RUN_LABELS, "bottleneck"),
        "1 for the bottleneck the live view shows, 0 for the other classes.",
    ),
    "torchtop_verdict_confidence_ratio": MetricSpec(
        "gauge", RUN_LABELS, "Confidence (0-1) of the verdict shown."
    ),
    "torchtop_gpu_utilization_ratio": MetricSpec(
        "gauge", GPU_LABELS, "GPU busy share (0-1), nvidia-smi utilization.gpu."
    ),
    "torchtop_gpu_memory_used_bytes": MetricSpec(
        "gauge", GPU_LABELS, "Device memory used, nvidia-smi memory.used."
    ),
    "torchtop_gpu_memory_total_bytes": MetricSpec(
        "gauge", GPU_LABELS, "Device memory in all, nvidia-smi memory.total."
    ),
    "torchtop_gpu_power_watts": MetricSpec(
        "gauge", GPU_LABELS, "Power draw, nvidia-smi power.draw."
    ),
    "torchtop_gpu_temperature_celsius": MetricSpec(
        "gauge", GPU_LABELS, "GPU temperature, nvidia-smi temperature.gpu."
    ),
    "torchtop_memory_growth_bytes_per_second": MetricSpec(
        "gauge",
        (*RUN_LABELS, "memory"),
        "Steady memory growth over the run (host: the resident set; device: allocated), at the "
        "run's step rate; absent where memory does not grow steadily.",
    ),
    "torchtop_memory_seconds_to_limit": MetricSpec(
        "gauge",
        (*RUN_LABELS, "memory"),
        "Seconds until that growth reaches the nearest known limit at this rate.",
    ),
    "torchtop_stall_lost_ratio": MetricSpec(
        "gauge",
        RUN_LABELS,
        "Share of the run's step time (0-1) lost to stalls that recur every N steps; absent "
        "where no slow steps recur.",
    ),
    "torchtop_stall_period_steps": MetricSpec("gauge", RUN_LABELS, "Steps between those stalls."),
    "torchtop_update_timestamp_seconds": MetricSpec(
        "gauge", RUN_LABELS, "Unix time of the tick these values come from; stale if it stops."
    ),
}
"""Every metric exposed, with its labels: docs/prometheus.md lists exactly these (a test)."""

GPU_FIELDS: dict[str, Callable[[GpuDevice], float | None]] = {
    "torchtop_gpu_utilization_ratio": lambda d: _scaled(d.utilization_gpu_pct, 0.01),
    "torchtop_gpu_memory_used_bytes": lambda d: _scaled(d.memory_used_bytes, 1.0),
    "torchtop_gpu_memory_total_bytes": lambda d: _scaled(d.memory_total_bytes, 1.0),
    "torchtop_gpu_power_watts": lambda d: _scaled(d.power_w, 1.0),
    "torchtop_gpu_temperature_celsius": lambda d: _scaled(d.temperature_c, 1.0),
}


class RunMetrics:
    """The collector of one launcher: the newest tick's families, swapped in whole."""

    def __init__(self, run: str, node: str, clock: Callable[[], float] = time.time) -> None:
        self.run, self.node, self.clock = run, node, clock
        self._families: list[Metric] = []
        self.failures = 0
        """Ticks whose families could not be built; the last good ones stay served."""

    def publish(self, snapshot: Snapshot) -> None:
        """Called by the tick thread: it must never raise into the live view."""
        try:
            self._families = snapshot_families(snapshot, self.run, self.node, self.clock())
        except Exception:
            self.failures += 1

    def collect(self) -> Iterable[Metric]:
        return list(self._families)


def snapshot_families(snapshot: Snapshot, run: str, node: str, now_s: float) -> list[Metric]:
    """The metrics of one tick: per rank, the verdict shown, the newest GPU sample's devices."""
    families = _new_families()
    for analysis, pid, rank_node in rank_rows(snapshot.report, snapshot.state):
        # A shared folder's ranks carry their own node; a launcher's own ranks are its node's.
        labels = [run, rank_node or node, "" if analysis.rank is None else str(analysis.rank)]
        _add_rank(families, analysis, labels)
        if pid:
            info = families["torchtop_rank_info"]
            assert isinstance(info, InfoMetricFamily)
            info.add_metric(labels, {"pid": pid})
    shown = snapshot.shown
    for bottleneck in VERDICTS:
        value = 1.0 if shown.bottleneck == bottleneck else 0.0
        _gauge(families, "torchtop_verdict").add_metric([run, node, bottleneck], value)
    _gauge(families, "torchtop_verdict_confidence_ratio").add_metric([run, node], shown.confidence)
    gpu = snapshot.state.samples.gpu
    for device in gpu[-1].devices if gpu else ():
        for name, read in GPU_FIELDS.items():
            reading = read(device)
            if reading is not None:
                _gauge(families, name).add_metric([run, node, str(device.index)], reading)
    _add_long_run(families, snapshot.report.job.metrics, [run, node])
    _gauge(families, "torchtop_update_timestamp_seconds").add_metric([run, node], now_s)
    return [family for family in families.values() if family.samples]


def rank_rows(report: Report, state: RunState) -> list[tuple[RankAnalysis, str, str | None]]:
    """Each rank's analysis with its process id (as a label value; "" where unknown) and, in a
    folder several nodes share, its node.

    A run of one process has no `ranks`: the job is that process. `attach` without an agent
    has no stepping process: the job is the attached pid."""
    # A rank restarted under `run` has had several processes: the newest (by its hello) is it.
    newest_last = sorted(state.training_processes, key=lambda p: p.hello.t if p.hello else 0.0)
    pids = {p.label: str(p.pid) for p in newest_last}
    if report.ranks:
        return [
            (r.analysis, pids.get(r.analysis.label, "") if r.pid is None else str(r.pid), r.node)
            for r in _one_per_rank(report.ranks)
        ]
    only = state.training_processes
    if len(only) == 1:
        return [(report.job, str(only[0].pid), None)]
    return [(report.job, "" if report.pid is None else str(report.pid), None)]


def _one_per_rank(ranks: Iterable[RankReport]) -> list[RankReport]:
    """One row per node and rank: where a restarted rank's ended process is still listed
    beside its new one (`run` under torchrun's restarts), the one that runs is the series'."""
    kept: dict[tuple[str | None, str], RankReport] = {}
    for row in ranks:
        key = (row.node, row.analysis.label)
        held = kept.get(key)
        if held is None or _ended(held) or not _ended(row):
            kept[key] = row
    return list(kept.values())


def _ended(row: RankReport) -> bool:
    return row.standing is not None and row.standing.ended is not None


def _add_rank(families: Mapping[str, Metric], analysis: RankAnalysis, labels: list[str]) -> None:
    metrics = analysis.metrics
    count = metrics.get("steps_count")
    mean_ms = _number(metrics.get("step_mean_ms"))
    if isinstance(count, int) and count > 0 and mean_ms is not None:
        summary = families["torchtop_step_seconds"]
        assert isinstance(summary, SummaryMetricFamily)
        for quantile, key in (("0.5", "step_p50_ms"), ("0.95", "step_p95_ms")):
            value = _number(metrics.get(key))
            if value is not None:
                quantile_labels = dict(zip(RANK_LABELS, labels, strict=True))
                quantile_labels["quantile"] = quantile
                summary.add_sample("torchtop_step_seconds", quantile_labels, value / 1000)
        summary.add_metric(labels, count, mean_ms / 1000 * count)
    rate = steps_per_s(metrics)
    if rate is not None:
        _gauge(families, "torchtop_steps_per_second").add_metric(labels, rate)
    # All zeros is a breakdown nothing measured yet (no step, no window), not a measured one.
    if any(analysis.breakdown.get(c, 0.0) > 0 for c in BREAKDOWN_KEYS):
        breakdown = _gauge(families, "torchtop_breakdown_ratio")
        for category in BREAKDOWN_KEYS:
            breakdown.add_metric([*labels, category], analysis.breakdown.get(category, 0.0))
    wait = metrics.get("dataloader_share")
    if isinstance(wait, float):
        _gauge(families, "torchtop_dataloader_wait_ratio").add_metric(labels, wait)
    mfu = analysis.efficiency.mfu if analysis.efficiency is not None else None
    if mfu is not None:
        _gauge(families, "torchtop_mfu").add_metric(labels, mfu)


LONG_RUN_GAUGES = {
    "torchtop_stall_lost_ratio": "stall_share_lost",
    "torchtop_stall_period_steps": "stall_period_steps",
}
MEMORY_FAMILIES = {"host": "rss_growth", "device": "cuda_growth"}
LONG_RUN_METRICS = (
    *LONG_RUN_GAUGES,
    "torchtop_memory_growth_bytes_per_second",
    "torchtop_memory_seconds_to_limit",
)
"""Present only once the whole run shows memory growing or stalls recurring."""


def _add_long_run(families: Mapping[str, Metric], metrics: Metrics, labels: list[str]) -> None:
    """The long run's figures (`assess.long_run`), where they were found."""
    for name, key in LONG_RUN_GAUGES.items():
        value = _number(metrics.get(key))
        if value is not None:
            _gauge(families, name).add_metric(labels, value)
    for memory, family in MEMORY_FAMILIES.items():
        per_hour = _number(metrics.get(f"{family}_bytes_per_hour"))
        if per_hour is not None:
            rate = _gauge(families, "torchtop_memory_growth_bytes_per_second")
            rate.add_metric([*labels, memory], per_hour / 3600)
        left = _number(metrics.get(f"{family}_seconds_to_limit"))
        if left is not None:
            _gauge(families, "torchtop_memory_seconds_to_limit").add_metric([*labels, memory], left)


def _new_families() -> dict[str, Metric]:
    families: dict[str, Metric] = {}
    for name, spec in METRICS.items():
        labels = [label for label in spec.labels if label != "quantile"]
        if spec.kind == "summary":
            families[name] = SummaryMetricFamily(name, spec.help, labels=labels)
        elif spec.kind == "info":  # its own labels are the value: the pid
            stem = name.removesuffix(INFO_SUFFIX)
            families[name] = InfoMetricFamily(stem, spec.help, labels=list(RANK_LABELS))
        else:
            families[name] = GaugeMetricFamily(name, spec.help, labels=labels)
    return families


def metric_name(family: Metric) -> str:
    """The name `METRICS` lists a family under: an info family is named without its `_info`,
    which its one sample carries."""
    return family.name + INFO_SUFFIX if family.type == "info" else family.name


def _gauge(families: Mapping[str, Metric], name: str) -> GaugeMetricFamily:
    family = families[name]
    assert isinstance(family, GaugeMetricFamily)
    return family


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else float(value) * factor


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
