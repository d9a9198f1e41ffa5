"""A memory in two tiers for System 1's reranks: hot nodes in the worker's view, cold ones in a store.

The hybrid search fuses two lists (`hybrid.rank_lists`); its reranks then read the candidates'
records (`node`: speaker, text, time) and their conversational neighbours (`neighbours`: the turn
before and after). With the lists read from a store that holds every node
(`sinks.qdrant.hybrid_index`), only those reads need the nodes themselves. `TieredMemory` answers
them from the hot view when it holds the node, else from the cold tier:
- the nodes the lists named (`prime`) are fetched in one batch at the first cold read;
- their neighbours (what the context rerank reaches) in one more at the first walk;
- any other node when asked for; everything fetched is kept for the request.

``cold_reads`` counts the nodes served from the cold tier, ``fetches`` the round trips. A node's
edges come from the view when it holds the node (`MemoryView.links`: an edge to a cold node
included), else from the links stored with it; their ends are kept when live and visible under the
view's own rule (`rebac.is_visible`, to the owner of a USER-layer node).

Two round trips a request rather than one per walked node: with Qdrant in process, fetching per
node decodes fewer nodes and is faster; with a Qdrant server each round trip is a network hop.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from engram.processors.rebac import USER_LAYER, Viewer, is_visible
from engram.processors.retrieval.types import Neighbour, NodeRecord
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import Layer


@dataclass(frozen=True, slots=True)
class ColdNode:
    """A node as the cold tier holds it: its record and its edges (both directions)."""

    record: NodeRecord
    links: tuple[Neighbour, ...] = ()


class ColdSource(Protocol):
    """Where cold nodes come from: fetched by id, in batches."""

    def cold_nodes(self, node_ids: Sequence[str]) -> dict[str, ColdNode]: ...


class TieredMemory:
    """``node`` and ``neighbours`` over a hot view and a cold source (see the module docstring).
    One per request: what it fetched stays for the request's other reranks."""

    def __init__(self, hot: MemoryView, cold: ColdSource) -> None:
        self._hot = hot
        self._cold = cold
        self._taken: dict[str, ColdNode | None] = {}  # None: the cold tier has no live node there
        self._listed: list[str] = []  # what the searches listed
        self._unread: list[str] = []  # listed, not fetched yet
        self._walked = False  # the listed nodes' neighbours are taken
        self._served: set[str] = set()
        self.fetches = 0

    @property
    def cold_reads(self) -> int:
        """Distinct nodes whose record came from the cold tier."""
        return len(self._served)

    def prime(self, node_ids: Sequence[str]) -> None:
        """The nodes a search listed: the first cold read fetches those the hot view does not hold
        in one round trip, and the first walk their neighbours in one more."""
        self._listed.extend(node_ids)
        self._unread.extend(node_ids)

    def node(self, node_id: str) -> NodeRecord | None:
        record = self._hot.node(node_id)
        if record is not None:
            return record
        cold = self._cold_node(node_id)
        if cold is None:
            return None
        self._served.add(node_id)
        return cold.record

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]:
        """The ends of the node's edges that are live and visible to the owner of a USER-layer
        node (the view's rule), wherever they are held."""
        record = self.node(node_id)
        if record is None:
            return []
        if not self._walked:  # the first walk: the listed nodes' neighbours, in one round trip
            self._walked = True
            listed = dict.fromkeys(self._listed)
            self._take([link.node_id for n in listed for link in self._links(n, layers, edge_types)])
        links = self._links(node_id, layers, edge_types)
        self._take([link.node_id for link in links])
        owner = Viewer(record.user_id or "" if record.layer == USER_LAYER else "")
        allowed = frozenset(layers)
        out: list[Neighbour] = []
        for link in links:
            other = self.node(link.node_id)
            if other is None or self._hot.is_dormant(link.node_id):
                continue
            if is_visible(other.layer, other.user_id, other.instance, owner, allowed):
                out.append(link)
        return out

    def _links(self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None) -> list[Neighbour]:
        if self._hot.node(node_id) is not None:
            return self._hot.links(node_id, layers, edge_types)
        cold = self._cold_node(node_id)
        return [] if cold is None else [n for n in cold.links if edge_types is None or n.edge_type in edge_types]

    def _cold_node(self, node_id: str) -> ColdNode | None:
        if node_id not in self._taken:
            if self._unread:  # the first cold read: every listed node the view does not hold, at once
                self._take([*self._unread, node_id])
                self._unread = []
            else:
                self._take([node_id])
        return self._taken.get(node_id)

    def _take(self, node_ids: Sequence[str]) -> None:
        """One round trip for the nodes neither tier has handed out yet."""
        missing = [n for n in dict.fromkeys(node_ids) if n not in self._taken and self._hot.node(n) is None]
        if missing:
            self.fetches += 1
            found = self._cold.cold_nodes(missing)
            self._taken.update({n: found.get(n) for n in missing})
