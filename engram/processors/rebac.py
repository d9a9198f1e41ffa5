"""ReBAC knowledge layers (seed 000 §4.3): restrict before traversal, never filter after retrieval.

Every stored node carries a layer (SYSTEM, ORGANIZATION, TEAM or USER) and a layer instance
(`node_instance`: ``system``, ``org:acme``, ``team:payments``, ``user:ada``). A request is seen by a
`Viewer`: the user whose memory is asked for, and the instances its principal reads (resolved from
relationship tuples by processors/trust/authorize.py; None on an open worker, where any instance of
an authorized shared layer is visible). The request's authorized layers and the viewer are applied
*before* any similarity is computed, in every store:

- Qdrant: `sinks.qdrant.search.visibility_filters` (payload keys `layer`, `user_id`, `instance`);
- Cypher: `cypher_layer_predicate` builds the `WHERE` fragment (`n.layer IN $layers ...`);
- the in-process `MemoryGraph` (vector, BM25, neighbours): its blocks are per instance, picked first;
- the SLB: `slb_key` folds the principal and its authorization set into the cache key.

Visibility rule: a node is visible to (viewer v, layers L) iff `node.layer in L` and, for the USER
layer, the node belongs to v's user; for the shared layers, its instance is one v reads.

`ensure_authorized` is the compiler's last, defensive check: an unauthorized item reaching the output
is a bug upstream and raises `UnauthorizedItemError` instead of being dropped quietly.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from engram.schemas.records import LAYERS, Layer

USER_LAYER: Final[Layer] = "USER"
SYSTEM_INSTANCE: Final = "system"
SHARED_LAYERS: Final[frozenset[Layer]] = frozenset({"SYSTEM", "ORGANIZATION", "TEAM"})
_CYPHER_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who a request is served to: ``user_id``, whose USER-layer memory it reads, and ``instances``,
    the shared-layer instances its principal reads (None: an open worker, no token gate, where every
    instance of an authorized shared layer is visible, as before instances existed)."""

    user_id: str
    instances: frozenset[str] | None = None

    def reads(self, instance: str) -> bool:
        return self.instances is None or instance in self.instances

    @property
    def key(self) -> str:
        """A short canonical name of the instance set, for cache keys: ``*`` when open."""
        if self.instances is None:
            return "*"
        joined = "\n".join(sorted(self.instances)).encode()
        return hashlib.blake2b(joined, digest_size=12).hexdigest()


def viewer_of(user_id: str, instances: Iterable[str] | None) -> Viewer:
    """The viewer of a request for ``user_id``'s memory: ``instances`` as the request carries them
    once authorized (None: an open worker, every instance)."""
    return Viewer(user_id, None if instances is None else frozenset(instances))


def node_instance(layer: str, user_id: str | None, instance: str | None) -> str:
    """The instance a node lives in: ``user:<owner>`` for the USER layer, ``system`` for SYSTEM, the
    node's own instance for the other shared layers. A shared node without one (written before
    instances existed) lives in its user's instance: visible to that user and whoever reads for them,
    never to a whole organization nobody named."""
    if layer == USER_LAYER:
        return f"user:{user_id or ''}"
    if layer == "SYSTEM":
        return SYSTEM_INSTANCE
    return instance or f"user:{user_id or ''}"


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


def is_visible(
    node_layer: str, node_user_id: str | None, node_instance_field: str | None, viewer: Viewer, layers: frozenset[Layer]
) -> bool:
    """The visibility rule above, for in-process stores and the defensive check. The node is given by
    its fields as stored (``node_instance_field`` may be None: see `node_instance`)."""
    if node_layer not in layers:
        return False
    if node_layer == USER_LAYER:
        return node_user_id == viewer.user_id
    return viewer.instances is None or node_instance(node_layer, node_user_id, node_instance_field) in viewer.instances


def slb_key(viewer: Viewer, session_id: str, layers: Iterable[Layer]) -> str:
    """The SLB cache key: one principal's cache never serves another principal, nor another
    authorization set of the same one (two users on one session name get two buffers; a revoked
    membership changes the instance set, so the old buffer is never served again). The user id is
    length-prefixed, so no pair of ids and session names can spell another pair's key."""
    user_id = viewer.user_id
    return f"{len(user_id)}:{user_id}|{session_id}|{layer_key(layers)}|{viewer.key}"


def slb_user_prefix(user_id: str) -> str:
    """What every `slb_key` of ``user_id``'s buffers begins with (to drop them all on erasure)."""
    return f"{len(user_id)}:{user_id}|"


def cypher_layer_predicate(viewer: Viewer, layers: Iterable[Layer], var: str = "n") -> tuple[str, dict[str, object]]:
    """The Cypher `WHERE` fragment and its `$params` for the visibility rule on node variable `var`.

    Parameters: `$layers` (list of layer names), `$user_layer` ("USER"), `$user_id`, `$any_instance`
    (true on an open worker) and `$instances` (the viewer's instances). A node stores its instance
    (`node_instance`) as property `instance`. Values are never interpolated; only the variable name
    is, after a regex check.
    """
    if not _CYPHER_VAR.match(var):
        msg = f"invalid Cypher variable name {var!r}"
        raise ValueError(msg)
    clause = (
        f"{var}.layer IN $layers AND ({var}.layer = $user_layer AND {var}.user_id = $user_id"
        f" OR {var}.layer <> $user_layer AND ($any_instance OR {var}.instance IN $instances))"
    )
    params: dict[str, object] = {
        "layers": ordered_layers(layers),
        "user_layer": USER_LAYER,
        "user_id": viewer.user_id,
        "any_instance": viewer.instances is None,
        "instances": sorted(viewer.instances or ()),
    }
    return clause, params


def ensure_authorized(
    items: Iterable[tuple[str, str, str | None, str | None]], viewer: Viewer, layers: frozenset[Layer]
) -> None:
    """Raise `UnauthorizedItemError` for the first (node_id, layer, owner, instance field) not visible."""
    for node_id, layer, owner, instance in items:
        if not is_visible(layer, owner, instance, viewer, layers):
            raise UnauthorizedItemError(node_id, layer, layers)
