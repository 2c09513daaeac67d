"""Nothing wrong loads: each mistake in a copy of the shipped rules is one line naming the file
and the key, and the verdict's policy values are read from `_verdict.toml`."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import msgspec
import pytest

from tests.conftest import RULES_DIR
from torchtop.diagnosis.engine import diagnose
from torchtop.diagnosis.rules import RuleError, load_rules
from torchtop.diagnosis.schema import Confidence, ExampleEntry, FixEntry, RuleFile, VerdictFile
from torchtop.model.analysis import Metrics


def shipped_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "rules"
    shutil.copytree(RULES_DIR, folder)
    return folder


def edit(folder: Path, name: str, old: str, new: str) -> Path:
    path = folder / name
    text = path.read_text()
    assert old in text, f"{old!r} is not in {name}: the shipped rules changed under the test"
    path.write_text(text.replace(old, new, 1))
    return path


MISTAKES = [
    pytest.param(
        "dataloader-starved.toml",
        'severity = "low"',
        'severty = "high"',
        "unknown key 'severty' (did you mean 'severity'?)",
        id="misspelt key",
    ),
    pytest.param(
        "dataloader-starved.toml",
        'description = "Keep workers',
        'descripton = "Keep workers',
        "unknown key 'fixes[1].descripton' (did you mean 'description'?)",
        id="misspelt key in a fix",
    ),
    pytest.param(
        "dataloader-starved.toml",
        'expect = "quiet"',
        'expected = "quiet"',
        "unknown key 'examples[1].expected' (did you mean 'expect'?)",
        id="misspelt key in an example",
    ),
    pytest.param(
        "_verdict.toml",
        "truncated_trace = 0.7",
        "truncated = 0.7",
        "unknown key 'confidence.truncated' (did you mean 'truncated_trace'?)",
        id="misspelt key in a table of _verdict.toml",
    ),
    pytest.param(
        "_verdict.toml",
        "min_steps = 1",
        "min_step = 1",
        "unknown key 'min_step' (did you mean 'min_steps'?)",
        id="misspelt key of _verdict.toml",
    ),
    pytest.param(
        "dataloader-starved.toml",
        'severity = "low"',
        'severity = "critical"',
        "severity: unknown severity 'critical' (one of low, medium, high)",
        id="unknown severity",
    ),
    pytest.param(
        "dataloader-starved.toml",
        'high = "dataloader_share > 0.3"',
        'critical = "dataloader_share > 0.3"',
        "severity_when.critical: unknown severity 'critical'",
        id="unknown severity level in severity_when",
    ),
    pytest.param(
        "dataloader-starved.toml",
        'knob = "dataloader.persistent_workers"',
        'knob = "dataloader.persistant_workers"',
        "fixes[1].knob: unknown knob 'dataloader.persistant_workers'"
        " (did you mean 'dataloader.persistent_workers'?)",
        id="unknown knob",
    ),
    pytest.param(
        "cpu-math-bound.toml",
        'value = "physical cores"',
        'value = "cores/(workers+1)"',
        "fixes[0].value: 'cores/(workers+1)' is not a value of env.OMP_NUM_THREADS",
        id="value expression the planner cannot resolve",
    ),
    pytest.param(
        "dataloader-starved.toml",
        "value = true",
        'value = "maybe"',
        "fixes[1].value: 'maybe' is not a value of dataloader.persistent_workers (true or false)",
        id="yes/no knob given another word",
    ),
    pytest.param(
        "cpu-math-bound.toml",
        'value = "close"',
        'value = "near"',
        "fixes[1].value: 'near' is not a value of env.OMP_PROC_BIND (one of close,",
        id="value outside the knob's choices",
    ),
    pytest.param(
        "cpu-math-bound.toml",
        'apply = "env"',
        'apply = "override"',
        "fixes[0].apply: env.OMP_NUM_THREADS is applied by env (or shown as code), not override",
        id="route the knob does not take",
    ),
    pytest.param(
        "gpu.toml",
        'title = "Device compute"',
        "title = 3",
        "title: expected str, got int",
        id="value of the wrong type",
    ),
    pytest.param(
        "gpu.toml",
        'title = "Device compute"\n',
        "",
        "missing key 'title'",
        id="missing key",
    ),
    pytest.param(
        "_verdict.toml",
        "truncated_trace = 0.7",
        "truncated_trace = 1.7",
        "confidence.truncated_trace: expected float <= 1.0",
        id="factor out of range",
    ),
    pytest.param(
        "tensor-cores-unused.toml",
        'offers = ["amp.dtype"]',
        'offers = ["amp.dtype", "env.OMP_NUM_THREADS"]',
        ".offers names env.OMP_NUM_THREADS, not a knob of this rule's fixes",
        id="example offering a knob its rule has no fix for",
    ),
]


@pytest.mark.parametrize(("name", "old", "new", "message"), MISTAKES)
def test_each_mistake_is_one_line_naming_the_file_and_the_key(
    tmp_path: Path, name: str, old: str, new: str, message: str
) -> None:
    folder = shipped_copy(tmp_path)
    path = edit(folder, name, old, new)
    with pytest.raises(RuleError) as caught:
        load_rules(folder)
    text = str(caught.value)
    assert text.startswith(f"{path}: ")
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize(
    "value",
    ['"cores"', '"logical cores"', '"cores / (workers + 1)"', '" Physical Cores "', "8", '"8"'],
)
def test_every_form_the_planner_resolves_loads(tmp_path: Path, value: str) -> None:
    folder = shipped_copy(tmp_path)
    edit(folder, "cpu-math-bound.toml", 'value = "physical cores"', f"value = {value}")
    fixes = load_rules(folder).rules["cpu-math-bound"].fixes
    assert fixes[0].knob == "env.OMP_NUM_THREADS"
    assert fixes[0].value == tomllib.loads(f"v = {value}")["v"]


def test_a_multiple_of_the_current_value_loads_for_a_numeric_knob(tmp_path: Path) -> None:
    folder = shipped_copy(tmp_path)
    edit(folder, "launch-bound.toml", 'value = "2x"', 'value = "1.5x"')
    knobs = {f.knob: f.value for f in load_rules(folder).rules["launch-bound"].fixes}
    assert knobs["train.batch_size"] == "1.5x"


def test_the_shipped_verdict_file_states_every_value_it_may() -> None:
    """The policy is read from the data: no value of the shipped tree is a default in code."""
    stated = tomllib.loads((RULES_DIR / "_verdict.toml").read_text())
    assert set(stated) == {f.encode_name for f in msgspec.structs.fields(VerdictFile)}
    assert set(stated["confidence"]) == {f.name for f in msgspec.structs.fields(Confidence)}


def one_gpu_step(steps: int) -> Metrics:
    """A GPU job that waits on its DataLoader 40% of the step."""
    return {
        "steps_count": steps,
        "has_gpu": True,
        "has_step_markers": True,
        "kernel_share": 0.4,
        "dataloader_share": 0.4,
        "other_share": 0.2,
        "memcpy_share": 0.0,
        "communication_share": 0.0,
        "cpu_exec_share": 0.0,
        "runtime_share": 0.0,
        "gpu_utilization": 0.4,
    }


def test_the_confidence_parameters_are_read_from_the_verdict_file(tmp_path: Path) -> None:
    shipped = load_rules(RULES_DIR)
    cut = {**one_gpu_step(3), "trace_truncated": True}
    whole, truncated = diagnose(shipped, one_gpu_step(3)), diagnose(shipped, cut)
    assert whole.bottleneck == truncated.bottleneck == "dataloader"
    assert truncated.confidence < whole.confidence
    folder = shipped_copy(tmp_path)
    edit(folder, "_verdict.toml", "truncated_trace = 0.7", "truncated_trace = 1.0")
    assert diagnose(load_rules(folder), cut).confidence == whole.confidence
    # A larger prior pseudo-count doubts a share seen in three looks more.
    edit(folder, "_verdict.toml", "pseudo_count = 0.5", "pseudo_count = 3.0")
    assert diagnose(load_rules(folder), one_gpu_step(3)).confidence < whole.confidence


def test_docs_rules_md_lists_exactly_the_keys_of_the_schema() -> None:
    text = (RULES_DIR.parent / "docs" / "rules.md").read_text()
    rows = {line.split("`")[1] for line in text.splitlines() if line.startswith("| `")}
    tables = (RuleFile, FixEntry, ExampleEntry, VerdictFile)
    assert rows == {f.encode_name for table in tables for f in msgspec.structs.fields(table)}
    for factor in msgspec.structs.fields(Confidence):
        assert f"`{factor.name}`" in text
