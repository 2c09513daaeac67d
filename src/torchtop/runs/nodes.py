"""A run folder that several launchers share, read as one run.

Each node's launcher writes a whole run folder under `RUN/nodes/<node>/` (`runs.identity`).
`SharedRunWatcher` tails each of them with a `RunWatcher` of its own, looking for new node
folders on every poll (a node whose launcher starts later joins the run), and folds them into
one `RunState`: every process carries its node and the folder its windows lie in, and the
nodes' own states stay in `RunState.nodes` for what is told per node (its counters). On a
folder without `nodes/` it is exactly a `RunWatcher`, so every reader can use it.

Process ids are only unique on one machine: a pid that two nodes share (containers start
their processes at similar numbers) is given a key of its own above any real pid.
"""

from __future__ import annotations

from pathlib import Path

from torchtop.runs.identity import node_folders
from torchtop.runs.layout import RunLayout
from torchtop.runs.state import ProcessState, RunState, RunWatcher, Samples

SHARED_MAX_STEPS = 512
"""The newest step records kept per rank of a shared run (a single launcher's keep
`runs.state.MAX_STEPS`): what the live assessment reads of a rank (its newest 30 steps, four
straggler windows of 50) with room to spare, so 512 ranks keep ~64 MB of steps, not ~1 GB."""
SHARED_MAX_SAMPLES = 300
"""The newest whole host and GPU samples kept per node of a shared run: the dashboard draws
240, a rank's end reads 10; a node's summary reads the figures of an hour's (`SampleFigures`)."""
PID_LIMIT = 2**22
"""Linux's largest pid (`pid_max` at most 2**22): keys from here up name no real process."""


class SharedRunWatcher(RunWatcher):
    """A `RunWatcher` that also reads a run folder shared by several nodes' launchers."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self._nodes: dict[str, RunWatcher] = {}
        self._keys: dict[tuple[str, int], int] = {}

    def poll(self, final: bool = False) -> RunState:
        folders = node_folders(self.state.layout.root)
        if not folders and not self._nodes:
            return super().poll(final)
        for folder in folders:
            if folder.name not in self._nodes:
                self._nodes[folder.name] = RunWatcher(folder, SHARED_MAX_STEPS, SHARED_MAX_SAMPLES)
        states = {name: watcher.poll(final) for name, watcher in self._nodes.items()}
        self._combine(states)
        return self.state

    def _combine(self, states: dict[str, RunState]) -> None:
        state = self.state
        state.nodes = states
        processes: dict[int, ProcessState] = {}
        for name, node in states.items():
            for pid, process in node.processes.items():
                process.node, process.folder = name, node.layout.root
                key = self._key(name, pid)
                process.pid = key
                processes[key] = process
        state.processes = processes
        launched = [node.run for node in states.values() if node.run is not None]
        state.run = launched[0] if launched else None
        state.samples = _first_with_host(states)
        state.unavailable = {k: v for node in states.values() for k, v in node.unavailable.items()}
        state.sampler_notes = [
            f"{name}: {note}" for name, node in states.items() for note in node.sampler_notes
        ]
        endings = [node.exit for node in states.values()]
        # The run has ended when every node's launcher has recorded its job's end.
        done = [e for e in endings if e is not None]
        state.exit = (
            max(done, key=lambda e: e.ended_at or 0.0) if len(done) == len(endings) else None
        )
        state.torn_lines = sum(node.torn_lines for node in states.values())
        state.unknown_kinds = sum(node.unknown_kinds for node in states.values())
        state.unknown_fields = sum(node.unknown_fields for node in states.values())

    def _key(self, name: str, pid: int) -> int:
        key = self._keys.get((name, pid))
        if key is None:
            used = set(self._keys.values())
            key = pid
            while key in used:
                key = max(PID_LIMIT, key + 1)
            self._keys[(name, pid)] = key
        return key


def _first_with_host(states: dict[str, RunState]) -> Samples:
    """The samples the run shows as its own: the first node's that has host samples."""
    for node in states.values():
        if node.samples.host:
            return node.samples
    return next(iter(states.values())).samples


def load_shared_run(root: Path) -> RunState:
    """`load_run` for a folder that may be shared by several nodes' launchers."""
    return SharedRunWatcher(root).poll(final=True)


def run_has_ended(root: Path) -> bool:
    """Whether every launcher writing `root` has recorded its job's end (`exit.json`): each
    node's, in a shared folder; a folder no launcher has written to yet has not ended."""
    folders = node_folders(root) or ([root] if RunLayout(root).run_json.is_file() else [])
    return bool(folders) and all(RunLayout(f).exit_json.is_file() for f in folders)
