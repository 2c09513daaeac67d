"""Tests that share a module's fixture run on one xdist worker: `--dist loadgroup` groups.

A module-scoped fixture is built once per worker that runs a test of its module. Many of this
suite's are a real training job (a traced run, a torchrun job, a built wheel): with the
module's tests spread over both workers, both built it, and the suite paid twice (the
module-times job took 76 s and then 130 s). Each test that uses a fixture scoped to its module
gets an `xdist_group` mark named after the module, so the README's `pytest -n 2 --dist
loadgroup` sends the module's tests to one worker; tests without such a fixture are spread as
before. This runs before xdist reads the marks (`tryfirst`).
"""

from __future__ import annotations

import pytest


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope == "module"
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _uses_a_module_fixture(item) and item.get_closest_marker("xdist_group") is None:
            module = getattr(item, "module", None)
            name = module.__name__ if module is not None else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(name))
