"""The report's `nodes`: each node of a run several launchers shared, with its ranks and a
summary of its own counters, so nodes can be set side by side (one slow or busy host stands
out). Pure: the run state in, report values out; empty for one launcher's run, whose report
then stays as it was."""

from __future__ import annotations

from torchtop.model.report import NodeReport
from torchtop.runs.state import RunState


def node_reports(state: RunState) -> tuple[NodeReport, ...]:
    # By name: the order the nodes joined in is a race between their launchers.
    return tuple(_node_report(name, node) for name, node in sorted(state.nodes.items()))


def _node_report(name: str, node: RunState) -> NodeReport:
    host = node.samples.host
    cpu = [float(s.cpu_pct) for s in host if s.cpu_pct is not None]
    memory = [s.mem_used_bytes for s in host if s.mem_used_bytes is not None]
    gpu = [
        float(device.utilization_gpu_pct)
        for sample in node.samples.gpu
        for device in sample.devices
        if device.utilization_gpu_pct is not None
    ]
    hosts = {p.hello.host for p in node.processes.values() if p.hello is not None}
    return NodeReport(
        name=name,
        ranks=tuple(p.rank for p in node.training_processes),
        host=node.launch.host or next(iter(sorted(h for h in hosts if h)), None),
        cpu_mean_pct=sum(cpu) / len(cpu) if cpu else None,
        mem_used_bytes=float(memory[-1]) if memory else None,
        gpu_mean_utilization_pct=sum(gpu) / len(gpu) if gpu else None,
        ended=node.exit.how if node.exit is not None else None,
        command=tuple(node.launch.command),
    )
