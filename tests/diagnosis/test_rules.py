"""Loading rules/: every shipped rule and its examples, and clear errors for broken rule files."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RULES_DIR, python_run
from torchtop.analysis.metric_names import CLASSES, METRICS
from torchtop.diagnosis import rule_cache
from torchtop.diagnosis import rules as rules_module
from torchtop.diagnosis.engine import fired_rules
from torchtop.diagnosis.rules import RuleError, RuleTree, load_rules

SHIPPED = load_rules(RULES_DIR)
EXAMPLES = [
    pytest.param(
        rule_id, index, id=f"{rule_id}-{index}-{'fires' if example.expect_fire else 'quiet'}"
    )
    for rule_id, rule in sorted(SHIPPED.rules.items())
    for index, example in enumerate(rule.examples)
]
SOURCE_WORDS = ("Source", "source", "torch-tb-profiler", "Guide", "documentation", "Measured")


def test_the_shipped_rules_load_into_one_tree_per_bottleneck_class() -> None:
    assert len(SHIPPED.rules) == len(list(RULES_DIR.glob("[!_]*.toml")))
    assert sorted(r.bottleneck_class for r in SHIPPED.roots) == sorted(CLASSES)
    for rule in SHIPPED.rules.values():
        assert rule.id == Path(rule.path).stem
        assert rule.bottleneck_class in CLASSES
        chain = SHIPPED.chain(rule.id)
        assert chain[-1] == rule.id
        assert SHIPPED.rules[chain[0]].parent is None
        assert SHIPPED.rules[chain[0]].bottleneck_class == rule.bottleneck_class


@pytest.mark.parametrize(("rule_id", "index"), EXAMPLES)
def test_every_example_of_every_rule_fires_or_stays_quiet_as_it_says(
    rule_id: str, index: int
) -> None:
    example = SHIPPED.rules[rule_id].examples[index]
    fired = fired_rules(SHIPPED, example.metrics)
    assert (rule_id in fired) is example.expect_fire, example.note or example.metrics


def test_every_rule_has_an_example_that_fires_and_one_that_stays_quiet() -> None:
    for rule in SHIPPED.rules.values():
        expectations = {example.expect_fire for example in rule.examples}
        assert expectations == {True, False}, rule.id


@pytest.mark.parametrize("rule_id", sorted(SHIPPED.rules))
def test_every_rule_says_where_its_reasoning_comes_from(rule_id: str) -> None:
    why = SHIPPED.rules[rule_id].why
    assert any(word in why for word in SOURCE_WORDS), why


def test_every_metric_a_rule_reads_is_in_the_vocabulary() -> None:
    for rule in SHIPPED.rules.values():
        assert rule.when.names <= METRICS.keys()
        assert set(rule.evidence) <= METRICS.keys()


# --- broken rule folders ---------------------------------------------------------------------

ROOT = """
    id = "gpu"
    class = "gpu"
    title = "Device compute"
    when = "has_gpu"
    recoverable = "kernel_share"
    work = "has_gpu"
    why = "Source: test."
"""
CHILD = """
    id = "gpu-busy"
    parent = "gpu"
    title = "Busy"
    when = "gpu_utilization > 0.9"
    why = "Source: test."
"""


def rule_folder(tmp_path: Path, **files: str) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir(exist_ok=True)
    for stem, text in files.items():
        (folder / f"{stem}.toml").write_text(textwrap.dedent(text))
    return folder


def test_a_minimal_rule_folder_loads(tmp_path: Path) -> None:
    tree = load_rules(rule_folder(tmp_path, gpu=ROOT, **{"gpu-busy": CHILD}))
    assert isinstance(tree, RuleTree)
    assert tree.chain("gpu-busy") == ("gpu", "gpu-busy")
    assert tree.rules["gpu-busy"].bottleneck_class == "gpu"


@pytest.mark.parametrize(
    ("files", "bad_file", "message"),
    [
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD.replace("gpu_utilization", "gpu_utilisation")},
            "gpu-busy",
            "unknown metric(s) gpu_utilisation",
            id="unknown metric in when",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD.replace('parent = "gpu"', 'parent = "gpu-compute"')},
            "gpu-busy",
            "parent 'gpu-compute' has no rule file",
            id="parent that does not exist",
        ),
        pytest.param(
            {
                "gpu": ROOT,
                "a": CHILD.replace('id = "gpu-busy"', 'id = "a"').replace(
                    'parent = "gpu"', 'parent = "b"'
                ),
                "b": CHILD.replace('id = "gpu-busy"', 'id = "b"').replace(
                    'parent = "gpu"', 'parent = "a"'
                ),
            },
            "a",
            "cycle",
            id="cycle",
        ),
        pytest.param(
            {"gpu": ROOT.replace('class = "gpu"', ""), "gpu-busy": CHILD},
            "gpu",
            "a root rule needs class",
            id="root without class",
        ),
        pytest.param(
            {"gpu": ROOT.replace('class = "gpu"', 'class = "disk"')},
            "gpu",
            "a root rule needs class",
            id="root with an unknown class",
        ),
        pytest.param(
            {"gpu": ROOT.replace('recoverable = "kernel_share"', ""), "gpu-busy": CHILD},
            "gpu",
            "a root rule needs recoverable",
            id="root without recoverable",
        ),
        pytest.param(
            {"gpu": ROOT.replace("recoverable =", "score ="), "gpu-busy": CHILD},
            "gpu",
            "'score' is gone",
            id="root with the old score",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD + 'work = "has_gpu"\n'},
            "gpu-busy",
            "only a root rule may say when its class is the work",
            id="child that claims to be the work",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD + 'class = "dataloader"\n'},
            "gpu-busy",
            "class: only a root rule names its class",
            id="child that names a class",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD + 'recoverable = "kernel_shar"\n'},
            "gpu-busy",
            "recoverable names unknown metric",
            id="child whose recoverable share names an unknown metric",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD.replace('id = "gpu-busy"', 'id = "gpu_busy"')},
            "gpu-busy",
            "must equal the file name",
            id="id not equal to the file name",
        ),
        pytest.param(
            {
                "gpu": ROOT,
                "gpu-busy": CHILD.replace(
                    '"gpu_utilization > 0.9"', '"gpu_utilization.real > 0.9"'
                ),
            },
            "gpu-busy",
            "not allowed",
            id="disallowed syntax",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD + 'severity = "urgent"\n'},
            "gpu-busy",
            "severity",
            id="unknown severity",
        ),
        pytest.param(
            {
                "gpu": ROOT,
                "gpu-busy": CHILD + '[[examples]]\nexpect = "fire"\nmetrics = { gpu_util = 1 }\n',
            },
            "gpu-busy",
            "unknown metric(s) gpu_util",
            id="unknown metric in an example",
        ),
        pytest.param(
            {"gpu": ROOT, "gpu-busy": CHILD + "when = [\n"},
            "gpu-busy",
            "not valid TOML",
            id="invalid TOML",
        ),
    ],
)
def test_a_broken_rule_file_fails_the_load_with_a_message_naming_it(
    tmp_path: Path, files: dict[str, str], bad_file: str, message: str
) -> None:
    folder = rule_folder(tmp_path, **files)
    with pytest.raises(RuleError) as caught:
        load_rules(folder)
    text = str(caught.value)
    assert str(folder / f"{bad_file}.toml") in text
    assert message in text
    assert "\n" not in text


def test_an_empty_rule_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuleError, match="no rule files"):
        load_rules(tmp_path / "empty")


def test_verdict_settings_are_read_from_the_underscore_file(tmp_path: Path) -> None:
    folder = rule_folder(tmp_path, gpu=ROOT)
    (folder / "_verdict.toml").write_text(
        'min_steps = 3\nmin_recoverable_share = 0.2\nevidence = "other_share < 0.5"\n'
    )
    settings = load_rules(folder).settings
    assert settings.min_steps == 3
    assert settings.min_recoverable_share == 0.2
    assert settings.evidence is not None
    assert settings.evidence.holds({"other_share": 0.1})


# --- the cached tree -------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TORCHTOP_CACHE_DIR", str(folder))
    return folder


def describe(tree: RuleTree) -> list[tuple[object, ...]]:
    """What a tree says, rule by rule (expressions compared by what they decide)."""
    return [
        (
            rule.id,
            rule.parent,
            rule.bottleneck_class,
            rule.title,
            rule.message,
            rule.why,
            rule.fixes,
            [fired_rules(tree, example.metrics) for example in rule.examples],
        )
        for rule in tree.rules.values()
    ]


def test_the_second_load_uses_the_cached_tree_and_it_says_the_same(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = load_rules(RULES_DIR)
    assert len(list(cache.glob("rules-*.pickle"))) == 1

    def no_parsing(*args: object) -> RuleTree:
        raise AssertionError("the tree was built again")

    monkeypatch.setattr(rules_module, "_build", no_parsing)
    cached = load_rules(RULES_DIR)
    assert describe(cached) == describe(built) == describe(SHIPPED)
    assert (
        cached.children == built.children
        and cached.settings.min_steps == SHIPPED.settings.min_steps
    )


def test_an_edited_rule_file_is_read_again(cache: Path, tmp_path: Path) -> None:
    folder = rule_folder(tmp_path, gpu=ROOT, **{"gpu-busy": CHILD})
    assert load_rules(folder).rules["gpu-busy"].title == "Busy"
    (folder / "gpu-busy.toml").write_text(textwrap.dedent(CHILD).replace("Busy", "Very busy"))
    assert load_rules(folder).rules["gpu-busy"].title == "Very busy"
    # A file that breaks after a good load is an error, not the old tree.
    (folder / "gpu-busy.toml").write_text('id = "gpu-busy"\nwhen = "no_such_metric > 1"\n')
    with pytest.raises(RuleError, match=r"gpu-busy\.toml"):
        load_rules(folder)


def test_a_cache_that_cannot_be_written_or_read_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TORCHTOP_CACHE_DIR", str(blocked))
    assert describe(load_rules(RULES_DIR)) == describe(SHIPPED)
    folder = tmp_path / "cache"
    monkeypatch.setenv("TORCHTOP_CACHE_DIR", str(folder))
    load_rules(RULES_DIR)
    (stored,) = folder.glob("rules-*.pickle")
    stored.write_bytes(stored.read_bytes()[:100])  # cut short, as a full disk would leave it
    assert describe(load_rules(RULES_DIR)) == describe(SHIPPED)
    assert len(stored.read_bytes()) > 100  # written whole again


def test_a_rule_file_that_is_not_utf8_is_named(cache: Path, tmp_path: Path) -> None:
    folder = rule_folder(tmp_path, gpu=ROOT)
    (folder / "gpu.toml").write_bytes(b'id = "gpu"\ntitle = "\xff"\n')
    with pytest.raises(RuleError, match=r"gpu\.toml: not UTF-8"):
        load_rules(folder)


def test_a_metric_removed_after_a_cached_load_fails_the_rules_that_name_it(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    load_rules(RULES_DIR)
    assert len(list(cache.glob("rules-*.pickle"))) == 1
    monkeypatch.delitem(METRICS, "dataloader_share")  # as if metric_names.py no longer had it
    with pytest.raises(RuleError, match=r"unknown metric\(s\) dataloader_share"):
        load_rules(RULES_DIR)


def test_a_changed_module_of_the_loader_builds_the_tree_anew(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builder = tmp_path / "metric_names.py"
    builder.write_text('METRICS = {"kernel_share": "..."}\n')
    monkeypatch.setattr(rule_cache, "BUILDERS", (*rule_cache.BUILDERS, str(builder)))
    builds: list[int] = []
    build = rules_module._build

    def counted(*args: Any) -> RuleTree:
        builds.append(1)
        return build(*args)

    monkeypatch.setattr(rules_module, "_build", counted)
    load_rules(RULES_DIR)
    load_rules(RULES_DIR)
    assert len(builds) == 1
    builder.write_text('METRICS = {"kernel_share": "...", "new_share": "..."}\n')
    load_rules(RULES_DIR)
    assert len(builds) == 2


def test_the_cache_key_covers_every_module_that_building_the_tree_imports(
    tmp_path: Path,
) -> None:
    code = (
        "import sys, torchtop\n"
        "before = set(sys.modules)\n"
        "from torchtop.diagnosis.rules import load_rules\n"
        "load_rules()\n"
        "print('\\n'.join(m for m in set(sys.modules) - before if m.startswith('torchtop')))\n"
    )
    out = python_run(code, env={**os.environ, "TORCHTOP_CACHE_DIR": str(tmp_path)}).stdout
    package = Path(rules_module.__file__).resolve().parents[1]
    loaded = {
        name.removeprefix("torchtop.").replace(".", "/") + ".py"
        for name in out.split()
        if not (package / name.removeprefix("torchtop.").replace(".", "/")).is_dir()
    }
    assert loaded <= set(rule_cache.BUILDERS)
    assert "analysis/metric_names.py" in loaded
