"""ViewArchive: the nodes that left a `MemoryView`'s RAM for its store, and what the view keeps of them.

The view (processors/retrieval/view.py) holds rows: records, vectors, the text index. When a node
goes dormant and the view has a store (`stored.NodeStore`), the node leaves those rows. This class
is what stays in their place, and the store it went to:

- a `stored.NodeStub` per node (who may see it, its index terms), so visibility, walks and
  erasure still work;
- per block, how many stubs it has and their BM25 statistics (`bm25.ArchiveStatistics`), so a
  search of the whole memory scores live rows and stored points with one set of statistics, and a
  requester who may see no stored node never reaches the store;
- the changes the store has still to hear of at the end of the view's ``apply``: nodes removed
  (deleted there) and nodes read back into RAM (flagged awake there, not deleted: a restart from an
  older snapshot reads them back again);
- a bounded cache of the nodes read back (`storage.ViewConfig.fetched_cache`), newest last.

A snapshot of the view pickles its archive without the store and the cache (the loader attaches
the worker's store: `MemoryView.attach`).
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence

from engram.processors.rebac import node_instance
from engram.processors.retrieval.bm25 import ArchiveStatistics
from engram.processors.retrieval.storage import BlockKey
from engram.processors.retrieval.stored import NodePoint, NodeStore, NodeStub, StoredNode


class ViewArchive:
    """See the module docstring. Owned by one view; not thread-safe."""

    def __init__(self, store: NodeStore | None = None, *, fetched_cache: int = 1024) -> None:
        self.store = store
        self.fetched_cache = fetched_cache
        self.stubs: dict[str, NodeStub] = {}
        self.written_through = False  # whether nodes went to a store (a snapshot says what it needs)
        self._woken: set[str] = set()  # read back since the last flush: flagged awake in the store
        self._gone: set[str] = set()  # removed since the last flush: deleted from the store
        self._stubbed: Counter[BlockKey] = Counter()  # stubs per block
        self._statistics: dict[BlockKey, ArchiveStatistics] = {}  # their BM25 statistics, per block
        self._fetched: OrderedDict[str, StoredNode] = OrderedDict()

    def __getstate__(self) -> dict[str, object]:
        """Everything but the store and what was read from it."""
        return {**self.__dict__, "store": None, "_fetched": OrderedDict()}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update({**ViewArchive().__dict__, **state})

    def __contains__(self, node_id: str) -> bool:
        return node_id in self.stubs

    def __len__(self) -> int:
        return len(self.stubs)

    # --- the view's changes -----------------------------------------------------------------------

    def add(self, node_id: str, stub: NodeStub, block: BlockKey) -> None:
        """The node left RAM (its point was written): its stub, and its terms in ``block``'s statistics."""
        self.stubs[node_id] = stub
        self._stubbed[block] += 1
        self._statistics.setdefault(block, ArchiveStatistics()).add(stub.terms, stub.frequencies)

    def forget(self, node_id: str) -> bool:
        """Drop the node's stub (it is back in RAM, or removed); whether it had one."""
        stub = self.stubs.pop(node_id, None)
        self._fetched.pop(node_id, None)
        if stub is None:
            return False
        key = (node_instance(stub.layer, stub.user_id, stub.instance), stub.layer)
        self._stubbed[key] -= 1
        self._statistics[key].add(stub.terms, stub.frequencies, sign=-1)
        if self._stubbed[key] <= 0:
            del self._stubbed[key], self._statistics[key]
        return True

    def placed(self, node_id: str) -> None:
        """The node has a row in RAM again (upserted or read back): it is no stub, and not removed."""
        self.forget(node_id)
        self._gone.discard(node_id)

    def woke(self, node_id: str) -> None:
        """The node was read back into RAM: its copy in the store is flagged awake at the next flush."""
        self._woken.add(node_id)

    def removed(self, node_id: str, *, held: bool) -> None:
        """The node was removed: its stub goes, and a node the view knew (``held`` in RAM, or
        stubbed) is deleted from the store at the next flush, awake or not."""
        stubbed = self.forget(node_id)
        self._woken.discard(node_id)
        if held or stubbed:
            self._gone.add(node_id)

    def flush(self, leaving: Sequence[NodePoint]) -> bool:
        """Tell the store what changed since the last flush and write the nodes ``leaving`` RAM;
        False (and nothing kept to tell) without a store, whose view keeps every node in RAM."""
        gone, woken = sorted(self._gone), sorted(self._woken - self._gone)
        self._gone, self._woken = set(), set()
        if self.store is None:
            return False
        self.written_through = True
        if gone:
            self.store.remove(gone)
        if woken:
            self.store.flag(woken, dormant=False)
        if leaving:
            self.store.write(leaving)
        return True

    # --- reading ---------------------------------------------------------------------------------

    def statistics(self, block: BlockKey) -> ArchiveStatistics | None:
        """The BM25 statistics of ``block``'s nodes that left RAM (None: none did)."""
        return self._statistics.get(block)

    def holds_any(self, blocks: Iterable[BlockKey]) -> bool:
        """Whether a node of any of ``blocks`` left RAM: whether a search of them needs the store."""
        return any(key in self._statistics for key in blocks)

    def visible(self, blocks: Iterable[BlockKey]) -> ArchiveStatistics | None:
        """The statistics of the nodes of ``blocks`` that left RAM, together (None: none did)."""
        found = [stats for key in blocks if (stats := self._statistics.get(key)) is not None]
        if len(found) <= 1:  # most often a user's own block: its statistics as they are, not a copy
            return found[0] if found else None
        out = ArchiveStatistics()
        for stats in found:
            out += stats
        return out

    def stored(self, node_ids: Sequence[str]) -> dict[str, StoredNode]:
        """The stubbed nodes among ``node_ids`` as the store holds them: those read back lately from
        the cache, the rest in one round trip (kept, the oldest dropped past ``fetched_cache``)."""
        wanted = [n for n in dict.fromkeys(node_ids) if n in self.stubs]
        missing = [n for n in wanted if n not in self._fetched]
        if missing and self.store is not None:
            for node_id, found in self.store.stored_nodes(missing).items():
                self._fetched[node_id] = found
        out = {n: self._fetched[n] for n in wanted if n in self._fetched}
        for node_id in out:
            self._fetched.move_to_end(node_id)
        while len(self._fetched) > self.fetched_cache:
            self._fetched.popitem(last=False)
        return out
