"""ReBAC knowledge layers (seed 000 §4.3): restrict before traversal, never filter after retrieval.

Every stored node carries a layer: SYSTEM, ORGANIZATION, TEAM or USER. A request's authorized layers
are applied *before* any similarity is computed, in every store:

- Qdrant: `qdrant_layer_filter` builds the payload filter (keys `layer` and `user_id`);
- Cypher: `cypher_layer_predicate` builds the `WHERE` fragment (`n.layer IN $layers ...`);
- the in-process `MemoryGraph` (vector, BM25, neighbours): its methods take `layers`;
- the SLB: `slb_key` folds the principal and its authorization set into the cache key.

Visibility rule: a node is visible to (user u, layers L) iff `node.layer in L` and, for the USER
layer, the node belongs to u. SYSTEM, ORGANIZATION and TEAM nodes are shared within their layer.

`ensure_authorized` is the compiler's last, defensive check: an unauthorized item reaching the output
is a bug upstream and raises `UnauthorizedItemError` instead of being dropped quietly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from schemas.records import LAYERS, Layer

USER_LAYER: Final[Layer] = "USER"
SHARED_LAYERS: Final[frozenset[Layer]] = frozenset({"SYSTEM", "ORGANIZATION", "TEAM"})
_CYPHER_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")


class LayerError(ValueError):
    """A layer name that is not one of SYSTEM, ORGANIZATION, TEAM, USER."""


class UnauthorizedItemError(RuntimeError):
    """An item outside the request's authorized layers reached the compiled context (a bug)."""

    def __init__(self, node_id: str, layer: str, authorized: frozenset[Layer]) -> None:
        self.node_id = node_id
        self.layer = layer
        self.authorized = authorized
        msg = f"node {node_id!r} in layer {layer!r} is outside the authorized layers {layer_key(authorized)!r}"
        super().__init__(msg)


def authorized_layers(layers: Iterable[str]) -> frozenset[Layer]:
    """Validate and canonicalize a request's layers. An empty set authorizes nothing."""
    out: set[Layer] = set()
    for name in layers:
        if name not in LAYERS:
            msg = f"unknown layer {name!r}; expected one of {', '.join(LAYERS)}"
            raise LayerError(msg)
        out.add(name)
    return frozenset(out)


def ordered_layers(layers: Iterable[Layer]) -> list[Layer]:
    """The layers in canonical order (SYSTEM, ORGANIZATION, TEAM, USER): stable keys and params."""
    chosen = set(layers)
    return [layer for layer in LAYERS if layer in chosen]


def layer_key(layers: Iterable[Layer]) -> str:
    """A canonical string for a set of layers, e.g. ``"SYSTEM+USER"``; ``"-"`` for the empty set."""
    names = ordered_layers(layers)
    return "+".join(names) if names else "-"


def is_visible(node_layer: str, node_user_id: str | None, user_id: str, layers: frozenset[Layer]) -> bool:
    """The visibility rule above, for in-process stores and the defensive check."""
    if node_layer not in layers:
        return False
    return node_layer != USER_LAYER or node_user_id == user_id


def slb_key(user_id: str, session_id: str, layers: Iterable[Layer]) -> str:
    """The SLB cache key: one principal's cache never serves another principal, nor another
    authorization set of the same one (two users on one session name get two buffers). The user id
    is length-prefixed, so no pair of ids and session names can spell another pair's key."""
    return f"{len(user_id)}:{user_id}|{session_id}|{layer_key(layers)}"


def qdrant_layer_filter(user_id: str, layers: Iterable[Layer]) -> dict[str, object]:
    """A Qdrant filter (REST/JSON shape) applying the visibility rule on payload keys `layer`, `user_id`.

    `must: layer in L` and, when USER is authorized together with shared layers, a nested `should`
    that admits shared layers or the user's own points. With no layer authorized the filter matches
    nothing (a `must` on an impossible layer value) rather than everything.
    """
    chosen = ordered_layers(layers)
    if not chosen:
        return {"must": [{"key": "layer", "match": {"any": ["__none__"]}}]}
    shared = [layer for layer in chosen if layer in SHARED_LAYERS]
    must: list[dict[str, object]] = [{"key": "layer", "match": {"any": list(chosen)}}]
    if USER_LAYER in chosen:
        own: dict[str, object] = {"key": "user_id", "match": {"value": user_id}}
        if shared:
            must.append({"should": [{"key": "layer", "match": {"any": shared}}, own]})
        else:
            must.append(own)
    return {"must": must}


def cypher_layer_predicate(user_id: str, layers: Iterable[Layer], var: str = "n") -> tuple[str, dict[str, object]]:
    """The Cypher `WHERE` fragment and its `$params` for the visibility rule on node variable `var`.

    Parameters: `$layers` (list of layer names), `$user_layer` ("USER"), `$user_id`. Values are never
    interpolated; only the variable name is, after a regex check.
    """
    if not _CYPHER_VAR.match(var):
        msg = f"invalid Cypher variable name {var!r}"
        raise ValueError(msg)
    clause = f"{var}.layer IN $layers AND ({var}.layer <> $user_layer OR {var}.user_id = $user_id)"
    params: dict[str, object] = {"layers": ordered_layers(layers), "user_layer": USER_LAYER, "user_id": user_id}
    return clause, params


def ensure_authorized(items: Iterable[tuple[str, str, str | None]], user_id: str, layers: frozenset[Layer]) -> None:
    """Raise `UnauthorizedItemError` for the first (node_id, layer, owner) not visible to the request."""
    for node_id, layer, owner in items:
        if not is_visible(layer, owner, user_id, layers):
            raise UnauthorizedItemError(node_id, layer, layers)
