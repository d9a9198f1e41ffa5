"""ReBAC: filters built before similarity, and the compiler's guarantee over random layer assignments."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.rebac import (
    LayerError,
    UnauthorizedItemError,
    Viewer,
    authorized_layers,
    cypher_layer_predicate,
    ensure_authorized,
    is_visible,
    slb_key,
)
from engram.processors.retrieval.types import NodeRecord
from engram.schemas.records import LAYERS, Layer
from tests.compiler.haystack import NEEDLES, distractors
from tests.compiler.memory import T0, USER, Fixture, VectorView, counter, embedder, request


def test_layers_are_validated_and_keys_canonical() -> None:
    assert authorized_layers(["USER", "SYSTEM", "USER"]) == frozenset({"USER", "SYSTEM"})
    with pytest.raises(LayerError):
        authorized_layers(["USER", "ADMIN"])
    u1, u2 = Viewer("u1"), Viewer("u2")
    assert slb_key(u1, "s1", ["USER", "SYSTEM"]) == slb_key(u1, "s1", ["SYSTEM", "USER"]) == "2:u1|s1|SYSTEM+USER|*"
    assert slb_key(u1, "s1", []) == "2:u1|s1|-|*"
    assert slb_key(u1, "s1", ["USER"]) != slb_key(u2, "s1", ["USER"])
    assert slb_key(Viewer("a|b"), "c", ["USER"]) != slb_key(Viewer("a"), "b|c", ["USER"])
    in_payments = Viewer("u1", frozenset({"system", "team:payments"}))
    assert slb_key(in_payments, "s1", ["TEAM"]) != slb_key(Viewer("u1", frozenset({"system"})), "s1", ["TEAM"])
    assert slb_key(in_payments, "s1", ["TEAM"]) == slb_key(
        Viewer("u1", frozenset({"team:payments", "system"})), "s1", ["TEAM"]
    )


def test_cypher_predicate_uses_params_only_and_rejects_injected_variables() -> None:
    viewer = Viewer("u1", frozenset({"system", "team:payments"}))
    clause, params = cypher_layer_predicate(viewer, ["USER", "SYSTEM"], var="m")
    assert clause == (
        "m.layer IN $layers AND (m.layer = $user_layer AND m.user_id = $user_id"
        " OR m.layer <> $user_layer AND ($any_instance OR m.instance IN $instances))"
    )
    assert params == {
        "layers": ["SYSTEM", "USER"], "user_layer": "USER", "user_id": "u1",
        "any_instance": False, "instances": ["system", "team:payments"],
    }  # fmt: skip
    assert cypher_layer_predicate(Viewer("u1"), ["TEAM"])[1]["any_instance"] is True
    for bad in ("n) DETACH DELETE n //", "1n", "n.layer", ""):
        with pytest.raises(ValueError, match="invalid Cypher variable"):
            cypher_layer_predicate(viewer, ["USER"], var=bad)


def test_visibility_rule_and_defensive_check() -> None:
    layers: frozenset[Layer] = frozenset({"USER", "TEAM"})
    u1 = Viewer("u1")
    assert is_visible("TEAM", None, None, u1, layers)
    assert is_visible("USER", "u1", None, u1, layers)
    assert not is_visible("USER", "u2", None, u1, layers)
    assert not is_visible("SYSTEM", None, None, u1, layers)
    with pytest.raises(UnauthorizedItemError, match="outside the authorized layers"):
        ensure_authorized([("ok", "TEAM", None, None), ("leak", "SYSTEM", None, None)], u1, layers)
    payments = Viewer("u1", frozenset({"system", "team:payments", "user:u1"}))
    assert is_visible("TEAM", "u2", "team:payments", payments, layers)
    assert not is_visible("TEAM", "u2", "team:fraud", payments, layers)
    assert not is_visible("TEAM", "u2", None, payments, layers)  # written before instances: u2's own
    assert is_visible("TEAM", "u1", None, payments, layers)
    with pytest.raises(UnauthorizedItemError):
        ensure_authorized([("other-team", "TEAM", "u2", "team:fraud")], payments, layers)


class LeakyView(VectorView):
    """A broken store that hands out a SYSTEM node whatever the request's layers."""

    def node(self, node_id: str) -> NodeRecord | None:
        record = super().node(node_id)
        if record is not None and node_id == "d000":
            return NodeRecord(record.node_id, record.kind, "SYSTEM", None, None, record.text, record.tokens, T0)
        return record


def test_compiler_raises_on_an_item_outside_the_authorized_layers() -> None:
    fx = Fixture()
    for i, text in enumerate(distractors(5)):
        fx.node(f"d{i:03d}", text)
    view = LeakyView(embedder=embedder(), token_counter=counter())
    view.apply(fx.events)
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED)
    with pytest.raises(UnauthorizedItemError):
        compiler.compile(request("Maria went hiking near the lake", 500, layers=["USER"]))


# --- the property: restrict before traversal -------------------------------------------------------

TEXTS = [t for t, _ in NEEDLES] + distractors(25)
QUERIES = [q for _, q in NEEDLES] + ["What did Maria do last week?", "Why did Tom start learning Spanish?"]


def _store(assignment: Sequence[tuple[Layer, bool]], authorized: frozenset[Layer], full: bool) -> VectorView:
    """Nodes i with (layer, owned by the requesting user?); NEXT chains; only visible ones unless `full`."""
    fx = Fixture()
    kept: list[str] = []
    for i, (text, (layer, own)) in enumerate(zip(TEXTS, assignment, strict=True)):
        owner = USER if own else "u-bob"
        if not full and not is_visible(layer, owner, None, Viewer(USER), authorized):
            continue
        kept.append(fx.node(f"m{i:02d}", text, layer=layer, user_id=owner, time_ms=T0 + i * 1000))
        if i and (full or f"m{i - 1:02d}" in kept):
            fx.edge("NEXT", f"m{i - 1:02d}", f"m{i:02d}", layer=layer)
    return fx.view()


assignments = st.lists(st.tuples(st.sampled_from(LAYERS), st.booleans()), min_size=len(TEXTS), max_size=len(TEXTS))


@given(
    assignment=assignments,
    authorized=st.sets(st.sampled_from(LAYERS), min_size=1).map(frozenset),
    query=st.sampled_from(QUERIES),
    budget=st.sampled_from([60, 150, 400]),
)
@settings(max_examples=40, deadline=None)
def test_no_unauthorized_item_and_identical_output_with_or_without_unauthorized_data(
    assignment: list[tuple[Layer, bool]], authorized: frozenset[Layer], query: str, budget: int
) -> None:
    req = request(query, budget, layers=sorted(authorized))
    outputs = []
    for full in (True, False):
        store = _store(assignment, authorized, full)
        compiler = ContextCompiler(store, embedder(), counter(), BALANCED, clock=lambda: 0.0)
        out = compiler.compile(req)
        for item in out["items"]:
            record = store.node(item["node_id"])
            assert record is not None and is_visible(record.layer, record.user_id, None, Viewer(USER), authorized)
        outputs.append([(i["node_id"], round(i["score"], 9)) for i in out["items"]])
    assert outputs[0] == outputs[1]
