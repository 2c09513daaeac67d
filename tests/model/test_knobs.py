"""The knob catalogue says how each knob applies. (That every fix in the rules names a knob of
the catalogue, by a route it takes, is checked by the rule loader: tests/diagnosis.)"""

from __future__ import annotations

from torchtop.agent.overrides import _APPLIERS, LOADER_KNOBS
from torchtop.model.knobs import ALLOW_GROUPS, CATALOGUE, ROUTES, find_knob


def test_every_override_knob_is_one_the_agent_can_apply() -> None:
    supported = set(LOADER_KNOBS) | set(_APPLIERS)
    overridable = {k.name for k in CATALOGUE.values() if "override" in k.routes}
    assert overridable == supported


def test_every_knob_has_a_meaning_known_routes_and_a_type() -> None:
    for knob in CATALOGUE.values():
        assert knob.meaning and knob.routes
        assert set(knob.routes) <= set(ROUTES)
        assert knob.type in ("int", "float", "bool", "str")
        if "env" in knob.routes:
            assert knob.env_name
        if knob.minimum is not None and knob.maximum is not None:
            assert knob.minimum <= knob.maximum


def test_knobs_that_change_convergence_name_the_group_that_allows_them() -> None:
    changing = {k.name: k.allow_group for k in CATALOGUE.values() if k.changes_convergence}
    assert changing["train.batch_size"] == "batch-size"
    assert changing["torch.float32_matmul_precision"] == "precision"
    assert changing["amp.dtype"] == "precision"
    assert changing["train.lr"] == "learning-rate"
    assert set(changing.values()) <= set(ALLOW_GROUPS)
    assert not CATALOGUE["dataloader.num_workers"].changes_convergence


def test_families_match_any_nccl_variable_and_any_code_change() -> None:
    nccl = find_knob("env.NCCL_ALGO")
    assert nccl is not None and nccl.routes == ("env",)
    code = find_knob("code.anything_new")
    assert code is not None and code.routes == ("code",)
    assert find_knob("env.NOT_A_KNOB") is None
    assert find_knob("code.") is None
