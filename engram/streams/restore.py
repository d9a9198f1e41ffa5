"""A worker's view and graph at start: the newest snapshot, then the event log after it.

Issue 50, item 2: a restart must not replay the past. The view and the graph engine are restored
from the snapshot the last run left (sinks/viewstate.py) and fed the memory events the local event
log holds past the snapshot's offsets, partition by partition; without a snapshot (the first
start, snapshots off, one written by other code) they are fed the whole log, as before. The memory
agent and the follower then resume after the same offsets (`Restored.applied`,
`Restored.replica_applied`): one position for everything the view holds.

With snapshots off (``ENGRAM_VIEW_SNAPSHOT_EVENTS=0``) a snapshot an earlier run left is deleted
rather than kept: nothing would delete it on an erasure.

With the view's store on (``ENGRAM_VIEW_STORE``, processors/retrieval/stored.py), the store is an
embedded Qdrant in ``<data dir>/view-store``, reopened as the last run left it. A snapshot goes with
the store it was written through to: one taken with the store off (or the other way round), or one
whose view has more nodes only in the store than the store holds (a data folder restored in part),
is not loaded, and the whole log rebuilds both. The store may be ahead of the snapshot (it is
written as events are applied, the snapshot now and then): the events after the snapshot write the
same points again, and a node re-awakened since finds its copy there (flagged awake, not deleted).
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.applied import AppliedOffsets
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.processors.trace.builder import TraceBuilder
from engram.schemas.record import Record
from engram.schemas.records import SUBJECT_ERASED, MemoryEvent
from engram.sinks.eventlog import LogRange
from engram.sinks.eventlog.reader import as_record
from engram.sinks.qdrant.hybrid_index import HybridIndex
from engram.sinks.viewstate import FILE, SnapshotWriter, ViewState, load_snapshot
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig
from engram.streams.follow import decoded
from engram.streams.sealing import eventlog_reader

SNAPSHOT_FOLDER = "view"
STORE_FOLDER = "view-store"


@dataclass
class Restored:
    """What the compile path starts from: the view, the graph, the offsets they hold, how many
    memory events that is, and the writer of their next snapshots (None: snapshots off)."""

    view: MemoryView
    graph: GraphEngine | None
    applied: AppliedOffsets
    replica_applied: AppliedOffsets
    events: int
    replayed: int  # of ``events``, those read from the log (the rest came with the snapshot)
    snapshots: SnapshotWriter | None
    from_snapshot: bool
    store: HybridIndex | None = None

    def close(self) -> None:
        """Release the view's store (a worker stopping; the next start reopens it)."""
        if self.store is not None:
            self.store.close()


def restored_view(config: EngramConfig, codecs: TopicCodecs, trace: TraceBuilder) -> Restored:
    """The view and the graph as of the snapshot (if any) and the log after it."""
    folder = config.data_dir / SNAPSHOT_FOLDER
    state = load_snapshot(folder) if config.view_snapshot_events else None
    if not config.view_snapshot_events:
        (folder / FILE).unlink(missing_ok=True)
    if state is not None and (state.graph is not None) != config.graph_queries:
        state = None  # taken with the graph engine on and started with it off, or the other way round
    store = view_store(config)
    if state is not None and len(state.view) and not matches(state.view, store):
        state = None
    if state is None:
        hot = ViewConfig(hot_turns=config.view_hot_turns or None)
        view = MemoryView(hot, embedder=trace.embedder, token_counter=trace.token_counter, store=store)
        graph = GraphEngine(embedder=trace.embedder, vectors=view.node_vectors) if config.graph_queries else None
        state = ViewState(view, graph, {}, {}, 0)
        loaded = False
    else:
        state.view.attach(trace.embedder, trace.token_counter, store)
        state.view.cap_hot(config.view_hot_turns or None)  # the cap this start was given
        if state.graph is not None:
            state.graph.attach(trace.embedder)
        loaded = True
    applied = AppliedOffsets(state.memory)
    tail = applied.admit(logged_memory(config, codecs, applied))
    state.view.apply(tail)
    if state.graph is not None:
        state.graph.apply(tail)
    writer = None
    if config.view_snapshot_events:
        writer = SnapshotWriter(
            folder, config.view_snapshot_events, config.view_snapshot_max_tail, covered=state.events
        )
        if any(event["change"][0] == SUBJECT_ERASED for event in tail):
            writer.discard()  # the snapshot loaded holds the erased user
    return Restored(state.view, state.graph, applied, AppliedOffsets(state.shared), state.events + len(tail),
                    len(tail), writer, loaded, store)  # fmt: skip


def view_store(config: EngramConfig) -> HybridIndex | None:
    """The view's store as the last run left it (None: off); a new one is sized by the first
    vectors written to it."""
    return HybridIndex.for_view(config.data_dir / STORE_FOLDER) if config.view_store else None


def matches(view: MemoryView, store: HybridIndex | None) -> bool:
    """Whether a snapshot's (non-empty) view goes with this store: written through to one (or
    neither), and the store holds at least as many points as the view has nodes only there."""
    return view.written_through == (store is not None) and (store is None or len(store) >= len(view.stubs()))


def logged_memory(config: EngramConfig, codecs: TopicCodecs, after: AppliedOffsets) -> list[Record[MemoryEvent]]:
    """The MemoryEvents the local event log holds past ``after``'s offsets (every one of a partition
    it has none for), per partition in offset order (what cannot be decoded was dead-lettered when
    it was stored, and is left out)."""
    reader = eventlog_reader(config)
    topic = config.topics.memory
    if topic not in reader.topics():
        return []
    return decoded(codecs.memory, [
        as_record(event)
        for partition in reader.partitions(topic)
        for event in reader.read_partition(topic, partition, LogRange(from_offset=after.next_offset(partition)))
    ])  # fmt: skip
