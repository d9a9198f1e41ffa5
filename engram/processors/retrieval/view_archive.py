"""ViewArchive: the nodes that left a `MemoryView`'s RAM for its store, and what the view keeps of them.

The view (processors/retrieval/view.py) holds rows: records, vectors, the text index. When a node
goes dormant, or a live one falls out of its block's hot set (`storage.ViewConfig.hot_turns`), and
the view has a store (`stored.NodeStore`), the node leaves those rows. This class is what stays in
their place, and the store it went to (`HotSets` is the order live turns leave in):

- a `stored.NodeStub` per node (who may see it, its index terms), so visibility, walks and
  erasure still work;
- which stubs are of live nodes (``cold``: searched as live, from the store) and which of dormant
  ones (the archive proper);
- per block and dormancy, the stubs' BM25 statistics (`bm25.ArchiveStatistics`), so a search
  scores the rows in RAM and the stored points of its scope with one set of statistics, and a
  requester who may see no stored node of that scope never reaches the store;
- the changes the store has still to hear of at the end of the view's ``apply``: nodes removed
  (deleted there), cold nodes gone dormant (flagged so), and nodes back in RAM (flagged held there,
  so no search of the store returns them, and not deleted: a restart from an older snapshot reads
  them back again);
- a bounded cache of the nodes read back (`storage.ViewConfig.fetched_cache`), newest last.

A snapshot of the view pickles its archive without the store and the cache (the loader attaches
the worker's store: `MemoryView.attach`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from engram.processors.retrieval.bm25 import ArchiveStatistics
from engram.processors.retrieval.rows import Scope
from engram.processors.retrieval.storage import BlockKey
from engram.processors.retrieval.stored import NodePoint, NodeStore, NodeStub, StoredNode


class HotSets:
    """Per block, the live turns a view holds in RAM, least recently written or used first: those
    past the cap (`storage.ViewConfig.hot_turns`) leave RAM for the store."""

    def __init__(self) -> None:
        self._order: dict[BlockKey, dict[str, None]] = {}

    def __bool__(self) -> bool:
        return bool(self._order)

    def heat(self, node_id: str, block: BlockKey) -> None:
        """The node was written or used: the newest of its block's hot set."""
        order = self._order.setdefault(block, {})
        order.pop(node_id, None)
        order[node_id] = None

    def cool(self, node_id: str, block: BlockKey) -> None:
        """The node left its block's hot set (removed, dormant, gone from RAM or moved)."""
        order = self._order.get(block)
        if order is not None:
            order.pop(node_id, None)

    def past(self, cap: int) -> list[str]:
        """The nodes past ``cap`` in their block, the coldest of each block first, taken out."""
        out: list[str] = []
        for key in sorted(self._order):
            order = self._order[key]
            while len(order) > cap:
                node_id = next(iter(order))
                del order[node_id]
                out.append(node_id)
        return out


class ViewArchive:
    """See the module docstring. Owned by one view; not thread-safe."""

    def __init__(self, store: NodeStore | None = None, *, fetched_cache: int = 1024) -> None:
        self.store = store
        self.fetched_cache = fetched_cache
        self.stubs: dict[str, NodeStub] = {}
        self.cold: set[str] = set()  # the stubs of live nodes (the rest are dormant)
        self.written_through = False  # whether nodes went to a store (a snapshot says what it needs)
        self._held: set[str] = set()  # back in RAM since the last flush: flagged held in the store
        self._slept: set[str] = set()  # cold nodes gone dormant since the last flush: flagged dormant
        self._gone: set[str] = set()  # removed since the last flush: deleted from the store
        # the stubs' BM25 statistics, per block and dormancy
        self._statistics: dict[tuple[BlockKey, bool], ArchiveStatistics] = {}
        self._fetched: OrderedDict[str, StoredNode] = OrderedDict()
        self.reads = self.fetches = 0  # nodes read back from the store, and the round trips that read them

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

    def add(self, node_id: str, stub: NodeStub, block: BlockKey, *, dormant: bool = True) -> None:
        """The node left RAM (its point was written): its stub, and its terms in ``block``'s
        statistics of its dormancy."""
        self.stubs[node_id] = stub
        if not dormant:
            self.cold.add(node_id)
        self._count(stub, block, dormant, 1)

    def _count(self, stub: NodeStub, block: BlockKey, dormant: bool, sign: int) -> None:
        stats = self._statistics.setdefault((block, dormant), ArchiveStatistics())
        stats.add(stub.terms, stub.frequencies, sign=sign)
        if stats.docs <= 0:
            del self._statistics[(block, dormant)]

    def forget(self, node_id: str) -> bool:
        """Drop the node's stub (it is back in RAM, or removed); whether it had one."""
        stub = self.stubs.pop(node_id, None)
        self._fetched.pop(node_id, None)
        if stub is None:
            return False
        dormant = node_id not in self.cold
        self.cold.discard(node_id)
        self._count(stub, stub.block, dormant, -1)
        return True

    def slept(self, node_id: str) -> bool:
        """A cold node went dormant: its terms move to the dormant statistics, and its copy in the
        store is flagged dormant at the next flush; whether it was a cold node."""
        if node_id not in self.cold:
            return False
        stub = self.stubs[node_id]
        self.cold.discard(node_id)
        self._count(stub, stub.block, False, -1)
        self._count(stub, stub.block, True, 1)
        self._slept.add(node_id)
        return True

    def placed(self, node_id: str) -> None:
        """The node has a row in RAM again (upserted or read back): it is no stub, and not removed;
        a copy of it in the store is flagged held at the next flush."""
        if self.forget(node_id):
            self._held.add(node_id)
        self._slept.discard(node_id)
        self._gone.discard(node_id)

    def removed(self, node_id: str, *, held: bool) -> None:
        """The node was removed: its stub goes, and a node the view knew (``held`` in RAM, or
        stubbed) is deleted from the store at the next flush, whatever its flag."""
        stubbed = self.forget(node_id)
        self._held.discard(node_id)
        self._slept.discard(node_id)
        if held or stubbed:
            self._gone.add(node_id)

    def flush(self, leaving: Sequence[NodePoint]) -> bool:
        """Tell the store what changed since the last flush and write the nodes ``leaving`` RAM;
        False (and nothing kept to tell) without a store, whose view keeps every node in RAM."""
        gone, held, slept = sorted(self._gone), sorted(self._held - self._gone), sorted(self._slept - self._gone)
        self._gone, self._held, self._slept = set(), set(), set()
        if self.store is None:
            return False
        self.written_through = True
        if gone:
            self.store.remove(gone)
        if held:
            self.store.hold(held)
        if slept:
            self.store.flag(slept, dormant=True)
        if leaving:
            self.store.write(leaving)
        return True

    # --- reading ---------------------------------------------------------------------------------

    def statistics(self, block: BlockKey) -> ArchiveStatistics | None:
        """The BM25 statistics of ``block``'s nodes that left RAM, live and dormant (None: none did)."""
        return _summed([s for dormant in (False, True) if (s := self._statistics.get((block, dormant))) is not None])

    def holds_any(self, blocks: Iterable[BlockKey], scope: Scope = "archived") -> bool:
        """Whether a node of ``scope`` of any of ``blocks`` left RAM: whether a search needs the store."""
        states = _states(scope)
        return any((key, dormant) in self._statistics for key in blocks for dormant in states)

    def visible(self, blocks: Iterable[BlockKey], scope: Scope = "all") -> ArchiveStatistics | None:
        """The statistics of the nodes of ``scope`` of ``blocks`` that left RAM, together (None:
        none did)."""
        states = _states(scope)
        return _summed([s for key in blocks for d in states if (s := self._statistics.get((key, d))) is not None])

    def of_scope(self, node_id: str, scope: Scope) -> bool:
        """Whether the node left RAM and is of ``scope``: cold ("live"), dormant ("archived"), either ("all")."""
        if node_id not in self.stubs:
            return False
        return scope == "all" or (node_id in self.cold) == (scope == "live")

    def stored(self, node_ids: Sequence[str]) -> dict[str, StoredNode]:
        """The stubbed nodes among ``node_ids`` as the store holds them: those read back lately from
        the cache, the rest in one round trip (kept, the oldest dropped past ``fetched_cache``)."""
        wanted = [n for n in dict.fromkeys(node_ids) if n in self.stubs]
        missing = [n for n in wanted if n not in self._fetched]
        if missing and self.store is not None:
            read = self.store.stored_nodes(missing)
            self.fetches += 1
            self.reads += len(read)
            for node_id, found in read.items():
                self._fetched[node_id] = found
        out = {n: self._fetched[n] for n in wanted if n in self._fetched}
        for node_id in out:
            self._fetched.move_to_end(node_id)
        while len(self._fetched) > self.fetched_cache:
            self._fetched.popitem(last=False)
        return out


def _states(scope: Scope) -> tuple[bool, ...]:
    """The dormancy of the nodes of ``scope``."""
    return {"live": (False,), "archived": (True,), "all": (False, True)}[scope]


def _summed(found: list[ArchiveStatistics]) -> ArchiveStatistics | None:
    """One set of statistics (the only one as it is, not a copy; None for none)."""
    if len(found) <= 1:
        return found[0] if found else None
    out = ArchiveStatistics()
    for stats in found:
        out += stats
    return out
