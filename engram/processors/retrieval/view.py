"""MemoryView: the in-process, event-fed implementation of the ``MemoryGraph`` protocol.

Fed by MemoryEvents (``apply``). Nodes live in blocks keyed by (instance, layer): a USER-layer node
in its user's instance, a shared node in its org's, team's or the system's (``processors.rebac``
visibility rule). A search by viewer V with layers L picks the blocks V may see *first*; similarity
(dot products, BM25 statistics) is computed on them alone, so unauthorized nodes neither appear nor
change any score.
Dormant nodes and inactive facts are kept as records but are not searchable.
With a `stored.NodeStore` (``store``), dormant nodes leave RAM for it at the end of each ``apply``:
their point is written (record, own and matched vectors, BM25 weights), their record and vector row
go, a `stored.NodeStub` stays, and a NodeReawakened reads them back (flagged held in the store).
With ``config.hot_turns``, so do the live turns of a user's block past that many, the least
recently written or used first (its hot set): their points are flagged awake, and an upsert or a
re-awakening brings one back. What stays of them, and the store, is the view's
`view_archive.ViewArchive`. Searches of the archive (``scope`` "archived") run in the store;
searches of live memory (``scope`` "live", the default) and of the whole memory ("all") merge the
view's live rows with the store's points of that scope, best first, scored with one set of BM25
statistics (the store is asked only when the requester may see a node of that scope that left RAM).
Facts (FactDecided) become nodes of kind "fact" with text "subject relation value" while active.
Accesses (NodesAccessed, FactAccessed) set a node's ``access_count`` and ``last_access_ms``
(processors/retrieval/access.py), which the decay score reads.
"""

from __future__ import annotations

import sys
from bisect import insort
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from engram.processors.embedding.base import Embedder
from engram.processors.embedding.vectors import node_vector
from engram.processors.rebac import USER_LAYER, Viewer, is_visible
from engram.processors.retrieval.access import Access, with_access
from engram.processors.retrieval.bm25 import Mask, corpus_statistics, idf_weights, with_archive
from engram.processors.retrieval.dated import Window, span_of
from engram.processors.retrieval.edges import EdgeTables
from engram.processors.retrieval.errors import TEXT_INDEX, VECTOR_INDEX, IndexUnavailableError
from engram.processors.retrieval.facts import fact_action, fact_record
from engram.processors.retrieval.layout import NeighbourhoodTerms, PlacedNode, view_layout
from engram.processors.retrieval.ranking import text_top, vector_top
from engram.processors.retrieval.rows import RowBlock, Scope
from engram.processors.retrieval.sparse import SparseBM25
from engram.processors.retrieval.storage import (
    BlockKey,
    Edge,
    Slot,
    ViewConfig,
    approx_tokens,
    block_key,
    node_record,
    one_layer,
)
from engram.processors.retrieval.stored import NodePoint, NodeStore, NodeStub, node_payload
from engram.processors.retrieval.text import indexed_terms, query_terms
from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.processors.retrieval.view_archive import HotSets, ViewArchive
from engram.processors.retrieval.view_fold import ViewFold
from engram.processors.tokens import TokenCounter
from engram.schemas.changes import dispatch
from engram.schemas.records import (
    LAYERS,
    PINNED_KINDS,
    EdgeUpserted,
    EventRef,
    FactDecided,
    Layer,
    MemoryEvent,
    NodeUpserted,
)

__all__ = ["MemoryView", "ViewConfig"]  # ViewConfig lives in storage.py; importers use it from here


class MemoryView:
    """See the module docstring. Not thread-safe: one worker owns a user's partition."""

    def __init__(
        self,
        config: ViewConfig | None = None,
        *,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        store: NodeStore | None = None,
    ) -> None:
        self.config = config or ViewConfig()
        self.embedder = embedder
        self._archive = ViewArchive(store, fetched_cache=self.config.fetched_cache)  # the nodes that left RAM
        self._count = token_counter.count if token_counter is not None else approx_tokens
        self._records: dict[str, NodeRecord] = {}
        self._slots: dict[str, Slot] = {}
        self._blocks: dict[BlockKey, RowBlock] = {}
        self._instances: dict[Layer, list[str]] = {}  # the instances each layer has a block for, sorted
        self._edges = EdgeTables(self.config.context_edge_type)
        self._dormant: set[str] = set()
        self._kind_codes: dict[str, int] = {}
        self._worn: set[BlockKey] = set()  # blocks given a tombstone since the last compaction check
        self._accesses: dict[str, Access] = {}  # node id -> its use (kept on its record's properties)
        self._hot = HotSets()  # the live turns held in RAM, per block, coldest first

    def attach(
        self, embedder: Embedder | None, token_counter: TokenCounter | None, store: NodeStore | None = None
    ) -> None:
        """The embedder, token counter and store of a view read back from a snapshot
        (sinks/viewstate.py), which holds none of them."""
        self.embedder = embedder
        self._count = token_counter.count if token_counter is not None else approx_tokens
        self._archive.store = store

    @property
    def store(self) -> NodeStore | None:
        return self._archive.store

    @property
    def store_reads(self) -> tuple[int, int]:
        """(nodes, round trips) read back from the store so far: what searching cold memory costs."""
        return self._archive.reads, self._archive.fetches

    @property
    def written_through(self) -> bool:
        """Whether its nodes went to a store (a snapshot says what it needs: streams/restore.py)."""
        return self._archive.written_through

    def __getstate__(self) -> dict[str, object]:
        """Everything but the embedder and the token counter (a model, the worker's own); the archive
        leaves its store out."""
        return {**self.__dict__, "embedder": None, "_count": approx_tokens}

    def __setstate__(self, state: dict[str, object]) -> None:
        config = state.get("config")
        fresh = MemoryView(config if isinstance(config, ViewConfig) else None)
        self.__dict__.update({**fresh.__dict__, **state})  # a snapshot of an older version lacks newer fields

    # --- feeding ------------------------------------------------------------------------------

    def apply(self, events: Iterable[MemoryEvent]) -> int:
        """Apply events in order; returns how many changed the view (RuleCommitted, accesses of
        nodes the view does not hold and change kinds this version does not know are not counted).
        Nodes arriving without an embedding are embedded in one batch at the end when the view has
        an embedder."""
        fold = ViewFold(self)
        for event in events:
            dispatch(event, fold)
        self._embed_pending(fold.pending)
        self._write_through()
        self._compact_worn()
        return fold.applied

    def cap_hot(self, hot_turns: int | None) -> None:
        """Cap each user's hot set at ``hot_turns`` from the next ``apply`` on (a view read back from
        a snapshot taken under another cap); its present turns join it, oldest first."""
        if hot_turns == self.config.hot_turns:
            return
        self.config = replace(self.config, hot_turns=hot_turns)
        self._hot = HotSets()
        for record in sorted(self._records.values(), key=lambda r: (r.event_time_ms, r.node_id)):
            self._heat(record)

    def _write_through(self) -> None:
        """With a store: tell it what was removed, read back or gone dormant, then write each
        dormant node the view still holds and each live one past its block's hot set, and let them
        leave RAM."""
        if self.store is None:
            self._archive.flush([])
            return
        leaving = sorted(self._dormant.intersection(self._slots))
        cooling = self._hot.past(self.config.hot_turns) if self.config.hot_turns is not None else []
        lengths: dict[BlockKey, float] = {}
        if self._archive.flush([self._point(node_id, lengths) for node_id in (*leaving, *cooling)]):
            for node_id in leaving:
                self._evict(node_id, dormant=True)
            for node_id in cooling:
                self._evict(node_id, dormant=False)

    def _heat(self, record: NodeRecord) -> None:
        """The node was written or used: the newest of its block's hot set, when the view caps one
        and the node is a live turn of a user's block held in RAM."""
        node_id = record.node_id
        slot = self._slots.get(node_id)
        if (
            self.config.hot_turns is None or slot is None or node_id in self._dormant
            or record.kind not in self.config.hot_kinds or record.layer != USER_LAYER
        ):  # fmt: skip
            return
        self._hot.heat(node_id, slot.block)

    def _point(self, node_id: str, lengths: dict[BlockKey, float]) -> NodePoint:
        """The node as the store keeps it; its BM25 weights normalized by its block's mean length
        (archive included) now, kept in ``lengths`` for the block's other nodes."""
        slot = self._slots[node_id]
        record, block = self._records[node_id], self._blocks[slot.block]
        if slot.block not in lengths:
            held = corpus_statistics([(block.text_index, block.live(scope="all"))])
            lengths[slot.block] = with_archive(*held, self._archive.statistics(slot.block))[1]
        sparse = SparseBM25(self.config.bm25, lengths[slot.block])
        own = block.vectors[slot.row].copy() if block.vectors is not None and block.has_vector[slot.row] else None
        payload = node_payload(record, node_id in self._dormant)
        return NodePoint(node_id, block.matched_vector(slot.row), sparse.counted(*self._counts(node_id)), payload, own)

    def _counts(self, node_id: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The node's distinct index terms and their frequencies (as its row was indexed)."""
        slot = self._slots[node_id]
        if self.config.text_index:
            return self._blocks[slot.block].text_index.counts(slot.row)
        counts = Counter(indexed_terms(self._records[node_id], self.config.indexed_properties))
        return tuple(counts), tuple(counts.values())

    def _evict(self, node_id: str, *, dormant: bool) -> None:
        """The node's record and row leave RAM; a stub stays (its edges stay too), and its terms in
        its block's statistics of stored nodes of its dormancy."""
        terms, frequencies = self._counts(node_id)
        slot = self._slots.pop(node_id)
        self._hot.cool(node_id, slot.block)
        stub = NodeStub.of(self._records.pop(node_id), terms, frequencies)
        self._archive.add(node_id, stub, slot.block, dormant=dormant)
        self._blocks[slot.block].searchable[slot.row] = self._blocks[slot.block].archived[slot.row] = False
        self._worn.add(slot.block)

    def _compact_worn(self) -> None:
        """Rebuild each block whose tombstones are a quarter of its rows (and at least
        ``config.compact_rows``, or the hot set's cap when smaller) without them; its nodes' slots
        move to their new rows. A rebuild of n rows drops n/4 or more, so it costs O(1) a tombstone."""
        least = self.config.compact_rows
        if self.config.hot_turns is not None:  # a capped block's tombstones are its cold turns' old rows
            least = min(least, self.config.hot_turns)
        for key in sorted(self._worn):
            block = self._blocks[key]
            dead = block.tombstones()
            if dead < least or dead * 4 < block.size:
                continue
            block, moved = block.compacted()
            self._blocks[key] = block
            for node_id in dict.fromkeys(block.node_ids):  # a row kept as context only belongs to no slot
                slot = self._slots.get(node_id)
                if slot is not None and slot.block == key and moved[slot.row] >= 0:
                    slot.row = int(moved[slot.row])
        self._worn.clear()

    def _upsert(self, node: NodeUpserted, sources: tuple[EventRef, ...], pending: list[tuple[str, int]]) -> None:
        record = node_record(node, sources, self._count)
        row = self._place(record)
        vector = node_vector(node)
        if vector is not None:
            self._blocks[block_key(record)].set_vector(row, vector)
        elif record.text:
            pending.append((record.node_id, row))

    def _decide_fact(self, fact: FactDecided, sources: tuple[EventRef, ...], pending: list[tuple[str, int]]) -> None:
        action = fact_action(fact, present=fact["fact_id"] in self._records or fact["fact_id"] in self._archive)
        if action == "remove":
            self._remove(fact["fact_id"])
        elif action == "upsert":
            if fact["supersedes"]:
                self._remove(fact["supersedes"])
            pending.append((fact["fact_id"], self._place(fact_record(fact, sources, self._count))))

    def _note_access(self, node_ids: Iterable[str], at_ms: int) -> bool:
        """One access of each of ``node_ids`` at ``at_ms`` (event time); whether the view holds any."""
        held = False
        for node_id in node_ids:
            access = self._accesses[node_id] = self._accesses.get(node_id, Access()).then(at_ms)
            record = self._records.get(node_id)
            if record is not None:
                self._records[node_id] = with_access(record, access)
                if self._hot:
                    self._heat(record)
                held = True
        return held

    def _place(self, record: NodeRecord) -> int:
        """Store ``record`` in a fresh row (a replaced node's old row becomes a tombstone); the
        node's use so far stays on it."""
        if (access := self._accesses.get(record.node_id)) is not None:
            record = with_access(record, access)
        old = self._slots.get(record.node_id)
        self._archive.placed(record.node_id)
        if old is not None:
            self._blocks[old.block].searchable[old.row] = self._blocks[old.block].archived[old.row] = False
            self._worn.add(old.block)
            self._hot.cool(record.node_id, old.block)
        key = block_key(record)
        rows = self._blocks.get(key)
        if rows is None:
            rows = self._blocks[key] = RowBlock(self.config.chunk_rows, self.config.context_vectors)
            insort(self._instances.setdefault(record.layer, []), key[0])
        kind = self._kind_codes.setdefault(record.kind, len(self._kind_codes))
        row = rows.append(record.node_id, kind, indexed_terms(record, self.config.indexed_properties), span_of(record))
        if record.node_id in self._dormant:
            rows.searchable[row], rows.archived[row] = False, True
        self._records[record.node_id] = record
        self._slots[record.node_id] = Slot(key, row)
        self._heat(record)
        self._relink(record.node_id, neighbours=True)
        return row

    def _embed_pending(self, pending: list[tuple[str, int]]) -> None:
        if self.embedder is None or not self.config.vector_index:
            return
        live = [slot for nid, row in pending if (slot := self._slots.get(nid)) is not None and slot.row == row]
        if not live:
            return
        vectors = self.embedder.embed([self._records[self._blocks[s.block].node_ids[s.row]].text for s in live])
        for slot, vector in zip(live, vectors, strict=True):
            self._blocks[slot.block].set_vector(slot.row, vector)

    def _remove(self, node_id: str) -> None:
        slot = self._slots.pop(node_id, None)
        self._archive.removed(node_id, held=self._records.pop(node_id, None) is not None)
        self._accesses.pop(node_id, None)
        self._dormant.discard(node_id)
        if slot is not None:
            self._blocks[slot.block].searchable[slot.row] = self._blocks[slot.block].archived[slot.row] = False
            self._worn.add(slot.block)
            self._hot.cool(node_id, slot.block)
        for other in self._edges.detach(node_id):
            self._relink(other)

    def _set_dormant(self, node_id: str, *, dormant: bool, pending: list[tuple[str, int]]) -> None:
        if dormant:
            self._dormant.add(node_id)
            self._archive.slept(node_id)  # a cold node: flagged dormant in the store
        else:
            self._dormant.discard(node_id)
            if node_id in self._archive:
                self._take_back(node_id, pending)
        slot = self._slots.get(node_id)
        if slot is not None:
            block = self._blocks[slot.block]
            block.searchable[slot.row], block.archived[slot.row] = not dormant, dormant
            if dormant:
                self._hot.cool(node_id, slot.block)
            else:
                self._heat(self._records[node_id])

    def _take_back(self, node_id: str, pending: list[tuple[str, int]]) -> None:
        """A re-awakened node that left RAM comes back from the store with its own vector; its copy
        there stays, flagged held (a restart from an older snapshot reads it back again). A store
        that lost it leaves the stub: the node stays out of every search."""
        found = self._archive.stored([node_id]).get(node_id)
        if found is None:
            return
        row = self._place(found.record)
        if found.vector is not None:
            self._blocks[block_key(found.record)].set_vector(row, found.vector)
        elif found.record.text:
            pending.append((node_id, row))

    def _add_edge(self, edge: EdgeUpserted) -> None:
        value = Edge(edge["edge_id"], sys.intern(edge["edge_type"]), sys.intern(edge["src"]), sys.intern(edge["dst"]),
                     edge["weight"], one_layer(edge["layer"]))  # fmt: skip
        contracted = edge["properties"].get("contracted") == "true"  # dreaming's edge around a dormant node
        self._edges.add(value, contracted=contracted)
        self._relink_ends(value.edge_type, value.src, value.dst)

    def _drop_edge(self, src: str, dst: str, edge_id: str) -> None:
        dropped = self._edges.drop(src, dst, edge_id)
        self._relink_ends(dropped.edge_type if dropped is not None else None, src, dst)

    def _relink_ends(self, edge_type: str | None, src: str, dst: str) -> None:
        """Relink an edge's ends when it is a context edge (no other kind moves a contextual vector:
        a concept's thousandth REF edge must not walk the other 999)."""
        if edge_type is None or edge_type == self.config.context_edge_type:
            self._relink(src)
            self._relink(dst)

    def _relink(self, node_id: str, *, neighbours: bool = False) -> None:
        """Point the node's row at its context-edge neighbours' rows in the same block (the
        contextual vector); with ``neighbours``, refresh theirs too (the node got a new row). The
        first-arrived edge each way wins: a turn's own conversational neighbour, not an edge that
        dreaming added around a dormant neighbour (whose row keeps its vector)."""
        slot = self._slots.get(node_id)
        if slot is None or self.config.context_vectors == (0.0, 0.0):
            return
        if not self._edges.has_context(node_id):  # a concept: its REF edges go unread
            self._blocks[slot.block].set_context(slot.row, -1, -1)
            return
        linked = {True: -1, False: -1}  # outgoing (next) / incoming (previous)
        for table, outgoing in ((self._edges.out, True), (self._edges.into, False)):
            for edge in table.get(node_id, {}).values():
                other = self._slots.get(edge.dst if outgoing else edge.src)
                same_block = other is not None and other.block == slot.block
                if edge.edge_type == self.config.context_edge_type and other is not None and same_block:
                    if linked[outgoing] < 0:
                        linked[outgoing] = other.row
                    if neighbours:
                        self._relink(edge.dst if outgoing else edge.src)
        self._blocks[slot.block].set_context(slot.row, linked[False], linked[True])

    # --- reading (the MemoryGraph protocol) ------------------------------------------------------

    def __len__(self) -> int:
        """The nodes the view knows: those in RAM and those that left it for the store."""
        return len(self._records) + len(self._archive)

    def last_access_ms(self, node_id: str) -> int:
        """The node's latest recorded use (event time), -1 when none (processors/retrieval/access.py)."""
        access = self._accesses.get(node_id)
        return -1 if access is None else access.last_ms

    def node(self, node_id: str) -> NodeRecord | None:
        """The node's record: held in RAM, or read back from the store for a node that left it."""
        record = self._records.get(node_id)
        if record is not None or node_id not in self._archive:
            return record
        found = self._archive.stored([node_id]).get(node_id)
        return None if found is None else self._with_use(found.record)

    def _with_use(self, record: NodeRecord) -> NodeRecord:
        """A record read back from the store, with its use since it was written."""
        access = self._accesses.get(record.node_id)
        return record if access is None else with_access(record, access)

    def stubs(self) -> dict[str, NodeStub]:
        """The nodes that left RAM for the store (read-only use)."""
        return self._archive.stubs

    def _visibility(self, node_id: str) -> NodeRecord | NodeStub | None:
        """What decides who may see the node (layer, owner, instance), held or stubbed."""
        return self._records.get(node_id) or self._archive.stubs.get(node_id)

    def edges(self) -> Iterable[Edge]:
        return iter(self._edges)

    def records(self) -> Iterable[NodeRecord]:
        """Every node the view holds in RAM (a live view of the mapping: iterate it where the view
        is fed); `known_records` adds those that left RAM for the store."""
        return self._records.values()

    def known_records(self) -> list[NodeRecord]:
        """Every node the view knows, in id order: those in RAM, and those that left RAM read back
        from the store (one round trip; what the store has lost is left out)."""
        stored = [self._with_use(found.record) for found in self._archive.stored(sorted(self.stubs())).values()]
        return sorted([*self._records.values(), *stored], key=lambda r: r.node_id)

    def node_vectors(self, node_ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """(len(node_ids), dim) unit rows as stored; a zero row for a node without a vector (the
        SLB's and the compiler's `NodeVectors`: re-scoring a cached neighbourhood, relevance of
        nodes reached only through the graph)."""
        dim = next((b.vectors.shape[1] for b in self._blocks.values() if b.vectors is not None), 0)
        out = np.zeros((len(node_ids), dim), dtype=np.float32)
        stored = self._archive.stored(node_ids) if len(self._archive) else {}
        for i, node_id in enumerate(node_ids):
            slot = self._slots.get(node_id)
            if slot is None:
                found = stored.get(node_id)
                if found is not None and found.vector is not None and found.vector.shape[0] == dim:
                    out[i] = found.vector
                continue
            block = self._blocks[slot.block]
            if block.vectors is not None and block.has_vector[slot.row]:
                out[i] = block.vectors[slot.row]
        return out

    def matched_vectors(self, node_ids: Sequence[str]) -> list[npt.NDArray[np.float32] | None]:
        """Per node, the unit vector a search matches it by (``RowBlock.matched_vector``: the
        turn with its neighbours), None for a node the view does not hold or that has no vector."""
        out: list[npt.NDArray[np.float32] | None] = []
        for node_id in node_ids:
            slot = self._slots.get(node_id)
            out.append(None if slot is None else self._blocks[slot.block].matched_vector(slot.row))
        return out

    def term_scores(self, query: str, node_ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 of each node for ``query``, 0 for a node not stored or not searchable (the SLB's
        ``NodeTerms``), with the statistics ``text_search`` uses over the blocks these nodes live in."""
        return self.neighbourhood(node_ids).scores(query)

    def neighbourhood(self, node_ids: Sequence[str]) -> NeighbourhoodTerms:
        """These nodes' BM25 weights laid out once for repeated scoring (the SLB's hit path:
        ``NeighbourhoodLayout``); statistics over the blocks they live in, as of now."""
        keys: dict[BlockKey, int] = {}
        placed: list[PlacedNode] = []
        for position, node_id in enumerate(node_ids if self.config.text_index else ()):
            slot = self._slots.get(node_id)
            if slot is not None:
                part = keys.setdefault(slot.block, len(keys))
                terms, tfs = self._blocks[slot.block].text_index.counts(slot.row)
                placed.append(PlacedNode(position, part, slot.row, terms, tfs))
            elif node_id in self._archive.cold:  # live in the store: scored by its stub's terms
                stub = self._archive.stubs[node_id]
                part = keys.setdefault(stub.block, len(keys))
                placed.append(PlacedNode(position, part, -1, stub.terms, stub.frequencies))
        parts = [(self._blocks[key].text_index, self._blocks[key].live()) for key in keys]
        cold = self._archive.visible(keys, "live")
        return view_layout(len(node_ids), parts, placed, self.config.bm25, cold)

    def held_bytes(self, *, dormant: bool) -> tuple[int, int]:
        """(nodes, bytes) of the dormant nodes (or the live ones) as this view holds them in RAM:
        each node's vector row and its text's UTF-8 bytes. A lower bound (the search index's
        postings and the record objects come on top), measured, for `engram bench dream`."""
        nodes = self._dormant if dormant else [n for n in self._slots if n not in self._dormant]
        held = 0
        count = 0
        for node_id in nodes:
            slot = self._slots.get(node_id)
            if slot is None:
                continue
            vectors = self._blocks[slot.block].vectors
            held += (vectors[slot.row].nbytes if vectors is not None else 0) + len(self._records[node_id].text.encode())
            count += 1
        return count, held

    def context_rows(self) -> tuple[int, int]:
        """(rows, bytes of their vectors) kept in RAM only as a held node's context: the vector of a
        node that left RAM while a held neighbour's contextual vector reads it (`rows.RowBlock`)."""
        rows = held = 0
        for block in self._blocks.values():
            count = block.context_rows()
            rows += count
            held += count * (block.vectors.shape[1] * block.vectors.itemsize if block.vectors is not None else 0)
        return rows, held

    def is_dormant(self, node_id: str) -> bool:
        return node_id in self._dormant

    def is_searchable(self, node_id: str) -> bool:
        """Held and not dormant (exactly the node's row ``searchable`` bit: a replaced node's old
        row is a tombstone, but the node's slot points at its new row), or live in the store past
        its hot set; without touching numpy."""
        return (node_id in self._slots and node_id not in self._dormant) or node_id in self._archive.cold

    def _owner(self, node_id: str, user_id: str | None) -> Viewer:
        """Whose USER-layer neighbours a walk from ``node_id`` may see (see ``neighbours``)."""
        if user_id is not None:
            return Viewer(user_id)
        source = self._visibility(node_id)
        return Viewer(source.user_id or "" if source is not None and source.layer == USER_LAYER else "")

    def _reachable(
        self, other: str, owner: Viewer, allowed: frozenset[Layer], viewer: Viewer | None = None, *, whole: bool = False
    ) -> bool:
        """``other`` is stored, searchable (or, ``whole``, dormant) and visible to ``owner`` (and to
        ``viewer`` if given)."""
        record = self._visibility(other)
        return (
            record is not None
            and is_visible(record.layer, record.user_id, record.instance, owner, allowed)
            and (viewer is None or is_visible(record.layer, record.user_id, record.instance, viewer, allowed))
            and (self.is_searchable(other) or (whole and other in self._dormant))
        )

    def neighbours(
        self,
        node_id: str,
        layers: Collection[Layer],
        edge_types: Collection[str] | None = None,
        user_id: str | None = None,
        *,
        whole: bool = False,
    ) -> Sequence[Neighbour]:
        """Outgoing then incoming edges, in arrival order, whose edge layer is authorized and whose
        neighbour is searchable (not removed, not dormant) and visible (``rebac.is_visible``) under
        ``layers`` to ``user_id`` -- by default to the owner of a USER-layer ``node_id``; from a
        shared node, without ``user_id``, no USER-layer neighbour is visible."""
        return self.visible_neighbours(node_id, layers, edge_types, None, user_id, whole=whole)

    def visible_neighbours(
        self,
        node_id: str,
        layers: Collection[Layer],
        edge_types: Collection[str] | None,
        viewer: Viewer | None,
        user_id: str | None = None,
        *,
        whole: bool = False,
    ) -> list[Neighbour]:
        """``neighbours``, keeping only neighbours that ``viewer`` may see too (``rebac.is_visible``
        under ``layers``): what ``AuthorizedGraph`` asks for, in one pass over the edges. ``whole``:
        the memory with its archive (dormant neighbours count; dreaming's contracted edges do not)."""
        allowed = layers if isinstance(layers, frozenset) else frozenset(layers)
        owner = self._owner(node_id, user_id)
        out: list[Neighbour] = []
        for table, outgoing in ((self._edges.out, True), (self._edges.into, False)):
            for edge in table.get(node_id, {}).values():
                if edge.layer not in allowed or (edge_types is not None and edge.edge_type not in edge_types):
                    continue
                other = edge.dst if outgoing else edge.src
                if whole and edge.edge_id in self._edges.contracted:
                    continue
                if self._reachable(other, owner, allowed, viewer, whole=whole):
                    out.append(Neighbour(other, edge.edge_type, edge.weight, outgoing))
        return out

    def links(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> list[Neighbour]:
        """The node's edges in authorized layers, whether or not this view holds the other end (a
        memory whose cold part lives in a store walks them: `retrieval.tiered`), in the order
        ``neighbours`` gives; ``neighbours`` keeps only the ends held, live and visible."""
        allowed = layers if isinstance(layers, frozenset) else frozenset(layers)
        out: list[Neighbour] = []
        for table, outgoing in ((self._edges.out, True), (self._edges.into, False)):
            for edge in table.get(node_id, {}).values():
                if edge.layer in allowed and (edge_types is None or edge.edge_type in edge_types):
                    out.append(Neighbour(edge.dst if outgoing else edge.src, edge.edge_type, edge.weight, outgoing))
        return out

    def edges_among(
        self, node_ids: Collection[str], layers: Collection[Layer], edge_types: Collection[str], viewer: Viewer
    ) -> list[tuple[str, str]]:
        """(src, dst) of the edges between ``node_ids`` that a walk by ``viewer`` sees from either
        end (``neighbours(end, layers, edge_types)`` lists the other end, which ``viewer`` may
        see), sorted: one pass over the nodes' out-edges instead of a ``neighbours`` call per node."""
        allowed = layers if isinstance(layers, frozenset) else frozenset(layers)
        present = set(node_ids)
        pairs: set[tuple[str, str]] = set()
        for src in present:
            for edge in self._edges.out.get(src, {}).values():
                dst = edge.dst
                if dst not in present or edge.layer not in allowed or edge.edge_type not in edge_types:
                    continue
                if self._reachable(dst, self._owner(src, None), allowed, viewer) or self._reachable(
                    src, self._owner(dst, None), allowed, viewer
                ):
                    pairs.add((src, dst))
        return sorted(pairs)

    def _blocks_for(
        self, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None, scope: Scope = "live"
    ) -> list[tuple[RowBlock, Mask]]:
        """The blocks ``viewer`` may see under ``layers`` -- its user's USER block and the blocks of
        the shared instances it reads (``processors.rebac.is_visible``) -- each with its row mask
        (live rows; with ``scope`` the dormant archive's, or both); ``kinds`` narrows to those node
        kinds. Order is fixed (LAYERS order, then instance name) for deterministic ties."""
        codes = None
        if kinds is not None:
            codes = np.array([self._kind_codes[k] for k in kinds if k in self._kind_codes], dtype=np.int32)
        out: list[tuple[RowBlock, Mask]] = []
        for key in self._visible_keys(viewer, layers):
            block = self._blocks.get(key)
            if block is not None:
                out.append((block, block.live(codes, scope)))
        return out

    def _visible_keys(self, viewer: Viewer, layers: Collection[Layer]) -> Iterator[BlockKey]:
        """The keys of the blocks ``viewer`` may see under ``layers``, in `_blocks_for`'s order."""
        for layer in (layer for layer in LAYERS if layer in layers):
            names = [f"user:{viewer.user_id}"] if layer == USER_LAYER else self._instances.get(layer, [])
            for name in names:
                if layer == USER_LAYER or viewer.reads(name):
                    yield (name, layer)

    def _listed(self, found: list[Candidate], scope: Scope) -> list[Candidate]:
        """A store's list of the nodes of ``scope`` that left this view's RAM (a copy the view
        does not know of, left by an older run, is not), read back in one round trip (the reranks
        read their records next)."""
        kept = [c for c in found if self._archive.of_scope(c.node_id, scope)]
        self._archive.stored([c.node_id for c in kept])
        return kept

    def _stored_scope(self, scope: Scope, kinds: Collection[str] | None) -> Scope | None:
        """The stored nodes a search of ``scope`` narrowed to ``kinds`` may find: cold nodes are
        of ``config.hot_kinds`` only (None: none)."""
        if kinds is None or scope == "archived" or not set(kinds).isdisjoint(self.config.hot_kinds):
            return scope
        return "archived" if scope == "all" else None

    def vector_search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        viewer: Viewer,
        layers: Collection[Layer],
        kinds: Collection[str] | None = None,
        scope: Scope = "live",
    ) -> list[Candidate]:
        """Top-k cosine over the authorized blocks only (chosen before any dot product); ``scope``
        "archived" searches the dormant nodes, "all" both. Raises IndexUnavailableError when there
        are nodes to search but none has an embedding."""
        if not self.config.vector_index:
            raise IndexUnavailableError(VECTOR_INDEX, "disabled by configuration")
        stored_scope = self._stored_scope(scope, kinds)
        if self.store is None or stored_scope is None:
            return vector_top(self._blocks_for(viewer, layers, kinds, scope), query, k)
        stored: list[Candidate] = []
        if self._archive.holds_any(self._visible_keys(viewer, layers), stored_scope):  # cosines: one scale
            stored = self._listed(self.store.vector_list(query, k, viewer, layers, kinds, stored_scope), stored_scope)
        if scope == "archived":
            return stored
        return merged(vector_top(self._blocks_for(viewer, layers, kinds), query, k), stored, k)

    def text_search(
        self, query: str, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None,
        scope: Scope = "live",
    ) -> list[Candidate]:  # fmt: skip
        """Top-k BM25 with corpus statistics over the authorized blocks' rows of ``scope`` only."""
        if not self.config.text_index:
            raise IndexUnavailableError(TEXT_INDEX, "disabled by configuration")
        terms = query_terms(query)
        stored_scope = self._stored_scope(scope, kinds)
        if self.store is None or stored_scope is None:
            return text_top(self._blocks_for(viewer, layers, kinds, scope), terms, k, self.config.bm25)
        blocks = self._blocks_for(viewer, layers, kinds)
        archive = self._archive.visible(self._visible_keys(viewer, layers), stored_scope)
        stored: list[Candidate] = []
        if archive is not None:  # one set of statistics: the live rows' and the stored nodes' together
            weights = idf_weights([(b.text_index, live) for b, live in blocks], terms, archive)
            found = self.store.term_list(query, k, viewer, layers, kinds, stored_scope, weights)
            stored = self._listed(found, stored_scope)
        if scope == "archived":
            return stored
        return merged(text_top(blocks, terms, k, self.config.bm25, archive), stored, k)

    def dated_lists(
        self, query: str, query_vector: npt.NDArray[np.float32] | None, window: Window, k: int, viewer: Viewer,
        layers: Collection[Layer], kinds: Collection[str] | None = None,
    ) -> dict[str, list[Candidate]]:  # fmt: skip
        """The ``k`` live nodes whose time (`dated.span_of`) overlaps ``window`` that match
        ``query`` best by cosine (``vector``) and by BM25 (``bm25``), each scored as `vector_search`
        and `text_search` score it (a store's turns past their hot set included): what a question
        naming a date adds to its lists (`dated.with_dated`)."""
        live = self._blocks_for(viewer, layers, kinds)
        blocks = [(block, mask & block.within(window)) for block, mask in live]
        keys = list(self._visible_keys(viewer, layers))
        cold = self.store is not None and self._stored_scope("live", kinds) == "live"
        cold = cold and self._archive.holds_any(keys, "live")
        out: dict[str, list[Candidate]] = {}
        if query_vector is not None and self.config.vector_index:
            with suppress(IndexUnavailableError):  # the vector list itself fell back: nothing to add to
                found = vector_top(blocks, query_vector, k)
                if cold and self.store is not None:
                    stored = self.store.vector_list(query_vector, k, viewer, layers, kinds, "live", window)
                    found = merged(found, self._listed(stored, "live"), k)
                out["vector"] = found
        if self.config.text_index:
            terms = query_terms(query)
            ids = [c.node_id for c in text_top(blocks, terms, k, self.config.bm25)]
            scores = self.term_scores(query, ids)  # the rows were picked by the window's statistics
            hits = [Candidate(n, float(s), "bm25") for n, s in zip(ids, scores, strict=True) if s > 0.0]
            archive = self._archive.visible(keys, "live") if cold else None
            if archive is not None and self.store is not None:
                weights = idf_weights([(b.text_index, mask) for b, mask in live], terms, archive)
                stored = self.store.term_list(query, k, viewer, layers, kinds, "live", weights, window)
                hits = [*hits, *self._listed(stored, "live")]
            out["bm25"] = sorted(hits, key=lambda c: (-c.score, c.node_id))[:k]
        return out

    def pinned_nodes(self, viewer: Viewer, layers: Collection[Layer]) -> list[str]:
        """The policy and procedure nodes ``viewer`` may see: the compiler pins them (seed 001)."""
        return sorted(r.node_id for r in self.authorized_nodes(viewer, layers, PINNED_KINDS))

    def authorized_nodes(
        self, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None
    ) -> Iterator[NodeRecord]:
        """Searchable authorized nodes, block by block, newest row first (an index-free scan's order)."""
        for block, live in self._blocks_for(viewer, layers, kinds):
            for row in np.flatnonzero(live)[::-1]:
                yield self._records[block.node_ids[row]]


def merged(live: list[Candidate], archived: list[Candidate], k: int) -> list[Candidate]:
    """The ``k`` best of a live list and an archive list, best first, ties by id."""
    if not archived:
        return live
    return sorted([*live, *archived], key=lambda c: (-c.score, c.node_id))[:k]
