"""The view on disk (sinks/viewstate.py) and a start from it (streams/restore.py): a restart loads
the snapshot and replays only the log after it, to the view a replay of the whole log gives."""

from __future__ import annotations

import pickle
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.digest import view_content_hash
from engram.processors.retrieval.view import MemoryView
from engram.processors.trace.builder import TraceBuilder
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_dormant
from engram.schemas.record import Record
from engram.schemas.records import NODE_DORMANT, MemoryEvent, NodeUpserted
from engram.sinks.eventlog import EventLogSink
from engram.sinks.viewstate import FILE, FORMAT, SnapshotWriter, ViewState, load_snapshot
from engram.streams.codecs import TopicCodecs
from engram.streams.config import ConfigError, EngramConfig
from engram.streams.restore import SNAPSHOT_FOLDER, STORE_FOLDER, restored_view
from tests.sinks.events import T0_MS, Workload, conversation, fresh_content, subject_erased

EVENTS = conversation(Workload(users=3, turns_per_user=12))


def built(events: list[MemoryEvent]) -> tuple[MemoryView, GraphEngine]:
    view = MemoryView()
    graph = GraphEngine(vectors=view.node_vectors)
    view.apply(events)
    graph.apply(events)
    return view, graph


def written(folder: Path, state: ViewState) -> SnapshotWriter:
    writer = SnapshotWriter(folder, min_events=1)
    assert writer.start(state)
    writer.reap(wait=True)
    return writer


def test_a_snapshot_reads_back_the_view_and_graph_it_was_taken_of(tmp_path: Path) -> None:
    view, graph = built(EVENTS)
    sizes: list[int] = []
    writer = SnapshotWriter(tmp_path, min_events=1, on_written=lambda _s, size: sizes.append(size))
    assert writer.start(ViewState(view, graph, {0: len(EVENTS) - 1}, {1: 4}, len(EVENTS)))
    writer.reap(wait=True)
    assert sizes == [(tmp_path / FILE).stat().st_size] and writer.covered == len(EVENTS)
    state = load_snapshot(tmp_path)
    assert state is not None and state.graph is not None
    assert (state.memory, state.shared, state.events) == ({0: len(EVENTS) - 1}, {1: 4}, len(EVENTS))
    assert view_content_hash(state.view) == view_content_hash(view)
    assert state.graph.store.ids == graph.store.ids
    ids = sorted(record.node_id for record in view.records())
    assert np.array_equal(state.view.node_vectors(ids), view.node_vectors(ids))
    assert state.view.embedder is None and state.graph.embedder is None, "the model is the worker's, not the file's"


def test_a_snapshot_of_other_code_or_a_torn_one_is_ignored_and_leftovers_go(tmp_path: Path) -> None:
    view, graph = built(EVENTS)
    written(tmp_path, ViewState(view, graph, {}, {}, 1))
    whole = (tmp_path / FILE).read_bytes()
    (tmp_path / FILE).write_bytes(whole[: len(whole) // 2])
    assert load_snapshot(tmp_path) is None
    with (tmp_path / FILE).open("wb") as handle:
        pickle.dump((FORMAT, "another build"), handle)
        handle.write(whole)
    assert load_snapshot(tmp_path) is None
    (tmp_path / f"{FILE}.12.tmp").write_bytes(b"half")
    (tmp_path / f"{FILE}.13.done").write_bytes(b"a killed worker's")
    load_snapshot(tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == [FILE]


def test_an_erasure_deletes_the_snapshot_and_one_in_flight_is_not_kept(tmp_path: Path) -> None:
    view, graph = built(EVENTS)
    writer = written(tmp_path, ViewState(view, graph, {}, {}, 10))
    writer.discard()
    assert not (tmp_path / FILE).exists() and writer.covered == 0
    assert writer.start(ViewState(view, graph, {}, {}, 20))
    writer.discard()  # forked before the erasure: it holds the user
    writer.reap(wait=True)
    assert list(tmp_path.iterdir()) == []


def test_a_snapshot_is_due_after_the_minimum_and_a_quarter_of_what_the_last_covered() -> None:
    writer = SnapshotWriter(Path("unused"), min_events=100, covered=1000)
    assert not writer.due(1099) and not writer.due(1249) and writer.due(1250)
    assert SnapshotWriter(Path("unused"), min_events=100).due(100)


def test_a_capped_tail_makes_a_snapshot_due_before_a_quarter_of_a_long_history() -> None:
    writer = SnapshotWriter(Path("unused"), min_events=100, max_tail=500, covered=10_000)
    assert not writer.due(10_499) and writer.due(10_500)  # not 12,500: a start replays at most 500
    assert SnapshotWriter(Path("unused"), min_events=100, max_tail=50, covered=10_000).due(10_100)
    assert not SnapshotWriter(Path("unused"), min_events=100, max_tail=50, covered=10_000).due(10_099)


def logged(folder: Path, events: list[MemoryEvent], first_offset: int) -> None:
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    with EventLogSink(folder) as sink:
        for i, event in enumerate(events):
            offset = first_offset + i
            sink.add(Record("engram.memory", 0, offset, T0_MS, event["key"].encode(), codec.encode(event)))
        sink.flush()


@pytest.fixture
def trace() -> TraceBuilder:
    return TraceBuilder()


def test_a_start_loads_the_snapshot_and_replays_only_the_log_after_it(tmp_path: Path, trace: TraceBuilder) -> None:
    config = EngramConfig(data_dir=tmp_path, view_snapshot_events=1)
    codecs = TopicCodecs.for_config(config)
    first, later = EVENTS[:60], EVENTS[60:]
    logged(config.eventlog_dir, first, 0)
    start = restored_view(config, codecs, trace)
    assert not start.from_snapshot and start.events == len(first) and start.applied.snapshot() == {0: 59}
    assert start.snapshots is not None
    state = ViewState(start.view, start.graph, start.applied.snapshot(), start.replica_applied.snapshot(), start.events)
    start.snapshots.start(state)
    start.snapshots.reap(wait=True)
    start.close()  # the worker stops; the next start reopens the view's store
    logged(config.eventlog_dir, later, len(first))

    again = restored_view(config, codecs, trace)
    assert again.from_snapshot and again.events == len(EVENTS)
    assert again.applied.snapshot() == {0: len(EVENTS) - 1}
    assert view_content_hash(again.view) == view_content_hash(built(EVENTS)[0]), "what a replay of the whole log gives"
    assert again.view.embedder is trace.embedder
    again.close()

    erased = [subject_erased("user-1", T0_MS + 10**6, 0), *fresh_content("user-2", "new", 3, 16, 1, T0_MS)]
    logged(config.eventlog_dir, erased, len(EVENTS))
    assert (tmp_path / SNAPSHOT_FOLDER / FILE).exists()
    after_erasure = restored_view(config, codecs, trace)
    assert not (tmp_path / SNAPSHOT_FOLDER / FILE).exists(), "the snapshot on disk held the erased user"
    assert not [r for r in after_erasure.view.records() if r.user_id == "user-1"]


def test_with_snapshots_off_a_start_replays_the_whole_log_and_deletes_an_old_snapshot(
    tmp_path: Path, trace: TraceBuilder
) -> None:
    config = EngramConfig(data_dir=tmp_path, view_snapshot_events=1)
    codecs = TopicCodecs.for_config(config)
    logged(config.eventlog_dir, EVENTS, 0)
    start = restored_view(config, codecs, trace)
    written(tmp_path / SNAPSHOT_FOLDER, ViewState(start.view, start.graph, start.applied.snapshot(), {}, start.events))
    start.close()
    off = restored_view(EngramConfig(data_dir=tmp_path, view_snapshot_events=0), codecs, trace)
    assert not off.from_snapshot and off.snapshots is None and off.events == len(EVENTS)
    assert not (tmp_path / SNAPSHOT_FOLDER / FILE).exists()


def test_a_snapshot_goes_with_the_store_it_was_written_through_to(tmp_path: Path, trace: TraceBuilder) -> None:
    """Taken with the view's store off, a snapshot is not loaded with it on (its dormant nodes never
    reached the store), nor beside a store deleted since; the log rebuilds both."""
    codecs = TopicCodecs.for_config(EngramConfig(data_dir=tmp_path))
    turns = [n["node_id"] for e in EVENTS if (n := change_as(e, NodeUpserted)) is not None and n["kind"] == "event"]
    asleep = [memory_event("user-1", T0_MS + 10**6, [], NODE_DORMANT, node_dormant(n, "test")) for n in turns[:3]]
    events = [*EVENTS, *asleep]
    logged(EngramConfig(data_dir=tmp_path).eventlog_dir, events, 0)
    in_ram = EngramConfig(data_dir=tmp_path, view_snapshot_events=1, view_store=False)
    start = restored_view(in_ram, codecs, trace)
    assert start.store is None and not start.view.written_through
    written(tmp_path / SNAPSHOT_FOLDER, ViewState(start.view, start.graph, start.applied.snapshot(), {}, start.events))
    stored = EngramConfig(data_dir=tmp_path, view_snapshot_events=1)
    again = restored_view(stored, codecs, trace)
    assert not again.from_snapshot and again.store is not None and len(again.store) == len(again.view.stubs()) >= 3
    assert view_content_hash(again.view) == view_content_hash(built(events)[0])
    written(tmp_path / SNAPSHOT_FOLDER, ViewState(again.view, again.graph, again.applied.snapshot(), {}, again.events))
    again.close()
    beside = restored_view(stored, codecs, trace)
    assert beside.from_snapshot  # the store beside it: loaded
    beside.close()
    shutil.rmtree(tmp_path / STORE_FOLDER)
    lost = restored_view(stored, codecs, trace)
    assert not lost.from_snapshot and view_content_hash(lost.view) == view_content_hash(built(events)[0])
    lost.close()


def test_a_capped_view_restarts_from_its_snapshot_with_its_cold_turns_in_the_store(
    tmp_path: Path, trace: TraceBuilder
) -> None:
    """ENGRAM_VIEW_HOT_TURNS: the turns past each user's cap are in the store, a restart loads the
    snapshot beside it, and a start under another cap keeps the same memory."""
    config = EngramConfig(data_dir=tmp_path, view_snapshot_events=1, view_hot_turns=2)
    codecs = TopicCodecs.for_config(config)
    logged(config.eventlog_dir, EVENTS, 0)
    start = restored_view(config, codecs, trace)
    cold = sorted(n for n in start.view.stubs() if not start.view.is_dormant(n))
    assert len(cold) == 3 * 2  # each user's 4 live turns of its own, 2 kept in RAM
    assert all(start.view.is_searchable(n) for n in cold)
    assert view_content_hash(start.view) == view_content_hash(built(EVENTS)[0]), "the memory a replay gives"
    written(tmp_path / SNAPSHOT_FOLDER, ViewState(start.view, start.graph, start.applied.snapshot(), {}, start.events))
    start.close()
    again = restored_view(config, codecs, trace)
    assert again.from_snapshot and sorted(n for n in again.view.stubs() if not again.view.is_dormant(n)) == cold
    assert view_content_hash(again.view) == view_content_hash(built(EVENTS)[0])
    again.close()
    tighter = restored_view(replace(config, view_hot_turns=1), codecs, trace)
    assert tighter.from_snapshot and len([n for n in tighter.view.stubs() if not tighter.view.is_dormant(n)]) == 3 * 3
    assert view_content_hash(tighter.view) == view_content_hash(built(EVENTS)[0])
    tighter.close()


def test_a_hot_set_needs_the_view_store() -> None:
    with pytest.raises(ConfigError, match="ENGRAM_VIEW_STORE"):
        EngramConfig(view_store=False, view_hot_turns=10)
