"""The report's `nodes`: each node of a run several launchers shared, with its ranks and a
summary of its own counters, so nodes can be set side by side (one slow or busy host stands
out). Pure: the run state in, report values out; empty for one launcher's run, whose report
then stays as it was."""

from __future__ import annotations

from torchtop.model.report import NodeReport
from torchtop.runs.state import RunState, SampleFigures, Samples


def node_reports(state: RunState) -> tuple[NodeReport, ...]:
    # By name: the order the nodes joined in is a race between their launchers.
    return tuple(_node_report(name, node) for name, node in sorted(state.nodes.items()))


def _node_report(name: str, node: RunState) -> NodeReport:
    figures = _figures(node.samples)
    cpu, memory, gpu = figures.cpu_pct, figures.mem_used_bytes, figures.gpu_utilization_pct
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


def _figures(samples: Samples) -> SampleFigures:
    """The figures of the samples kept: those kept apart where the node keeps fewer samples."""
    if samples.figures is not None:
        return samples.figures
    figures = SampleFigures()
    for sample in samples.host:
        figures.add_host(sample)
    for gpu in samples.gpu:
        figures.add_gpu(gpu)
    return figures
