"""The CODE route's structural seeds (seed 000 §4.2.1): the polymorphic family of what a question
names, found in the code graph rather than by similarity.

A question naming `authorize()` seeds every class's `authorize` method (exact names: not
`authorize_user`), expands to the overrides across the inheritance family and to what each calls,
and returns them base class first. Flat similarity misses some of them (tests/code).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Protocol, TypeVar, runtime_checkable

from engram.processors.code.graph import ENTITY_KINDS, CodeGraphView, code_neighbourhood, seed_entities
from engram.processors.rebac import Viewer
from engram.processors.retrieval.types import Candidate, NodeRecord
from engram.schemas.records import Layer

CODE_KIND_PREFIX = "code_"
UNRESOLVED_KIND = "code_unresolved"  # an unresolved call target: a name with no code to show
FAMILY_SOURCE = "code-graph"


class _HasKind(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def node_id(self) -> str: ...


T = TypeVar("T", bound=_HasKind)


@runtime_checkable
class NodeCatalog(Protocol):
    def authorized_nodes(
        self, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None
    ) -> Iterator[NodeRecord]: ...


def code_family(
    catalog: object, walk: CodeGraphView, query: str, viewer: Viewer, layers: Collection[Layer], hops: int = 1
) -> list[str]:
    """Node ids of the family in reading order, or [] when the question names no known entity."""
    if not isinstance(catalog, NodeCatalog):
        return []
    seeds = seed_entities(catalog.authorized_nodes(viewer, layers, ENTITY_KINDS), query)
    if not seeds:
        return []
    return list(code_neighbourhood(walk, seeds, hops=hops, layers=layers).node_ids)


def with_family(family: list[str], candidates: list[Candidate]) -> list[Candidate]:
    """The family first, each as relevant as the best retrieved candidate; then the rest."""
    top = max((c.score for c in candidates), default=1.0) or 1.0
    members = set(family)
    return [Candidate(n, top, FAMILY_SOURCE) for n in family] + [c for c in candidates if c.node_id not in members]


def only_family_code(items: list[T], family: Sequence[str]) -> list[T]:
    """Drop code nodes outside the family; conversation turns and facts still compete for budget.

    Similarity alone would let a lookalike (`AuthService.authorize_user`, whose docstring talks
    about the same services) displace part of the polymorphic answer."""
    members = set(family)
    return [s for s in items if not s.kind.startswith(CODE_KIND_PREFIX) or s.node_id in members]
