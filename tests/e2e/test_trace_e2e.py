"""Issue 3, "Done means", through the real broker and a real worker subprocess, on LoCoMo.

1. Every session's NEXT chain is a total order of exactly its turns, also when turns arrive twice
   or late; ``backtrack(node, k)`` returns exactly the k previous turns of the session.
2. Replaying engram.memory from the event log into empty stores, twice, gives identical content
   hashes of the Qdrant points and of the graph, equal to the worker's own stores.
3. A worker SIGKILLed mid-batch and restarted leaves no lost and no duplicated node or edge, and
   the event log holds each turn offset exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.processors.trace.builder import event_node_id
from engram.processors.trace.navigate import TraceIndex
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, EventRef, MemoryEvent
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.steps import derive_turns
from tests.e2e.trace_support import (
    GraphContent,
    Progress,
    apply_to_fresh_stores,
    copies_over_one,
    drop_graphs,
    graph_content,
    locomo_turns,
    log_errors,
    logged,
    logged_turns,
    memory_items,
    missing,
    offset_gaps,
    progress,
    publish_turns,
    removed_edges,
    stored_hashes,
    topic_memory,
    upserted_nodes,
    wait_ingested,
    wait_until,
    worker_config,
)

pytestmark = pytest.mark.e2e

CONVERSATION = "30"  # 369 turns in 19 sessions
REPEATED = (10, 100, 200)  # positions of turns published a second time
LATE_SESSION, LATE_INDEX = "30:session_3", 4  # this turn is held back and published after the rest


@dataclass(frozen=True, slots=True)
class LocomoRun:
    config: EngramConfig
    turns: list[ConversationTurn]  # the conversation, each turn once
    published: int
    done: Progress


def sessions(turns: list[ConversationTurn]) -> dict[str, list[str]]:
    """Each session's node ids in turn_index order (the order the NEXT chain must have)."""
    out: dict[str, list[tuple[int, str]]] = {}
    for t in turns:
        out.setdefault(t["session_id"], []).append((t["turn_index"], event_node_id(t["user_id"], t["turn_id"])))
    return {session: [node for _, node in sorted(items)] for session, items in out.items()}


@pytest.fixture(scope="module")
def locomo_run(stack: StackInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocomoRun]:
    """One LoCoMo conversation through a worker: all turns but one, then 3 repeats, the held-back
    turn (late: its successors are already linked) and that turn again. The worker is stopped."""
    turns = locomo_turns(CONVERSATION)
    late = next(t for t in turns if t["session_id"] == LATE_SESSION and t["turn_index"] == LATE_INDEX)
    config = worker_config(stack, tmp_path_factory.mktemp("locomo"), "trace-locomo")
    try:
        with WorkerProcess(config, config.data_dir.parent / "worker.log", topic_prefix="trace-locomo") as worker:
            first = publish_turns(config, [t for t in turns if t is not late])
            wait_ingested(worker, config, first)
            second = publish_turns(config, [*(turns[i] for i in REPEATED), late, late])
            done = wait_ingested(worker, config, first + second)
            wait_until(
                "the event log to hold every memory event",
                lambda: len(logged(config, config.topics.memory)) >= done.memory_events,
                30,
                lambda: len(logged(config, config.topics.memory)),
            )
        yield LocomoRun(config, turns, first + second, done)
    finally:
        drop_graphs(stack, [config.graph_name, "trace-replay-a", "trace-replay-b"])


def test_next_chains_are_total_orders_and_backtrack_is_exact(locomo_run: LocomoRun) -> None:
    run = locomo_run
    assert run.published == len(run.turns) + len(REPEATED) + 1
    assert run.done.ingested == run.published
    events = topic_memory(run.config)
    assert len(events) == run.done.memory_events, "the broker holds exactly the memory events the worker counted"
    assert run.done.applied == {"qdrant": len(events), "graph": len(events)}
    # Each turn's node is upserted exactly once: repeated turns yield no events at all.
    upserted = upserted_nodes(events)
    turn_nodes = [node for chain in sessions(run.turns).values() for node in chain]
    assert {node: upserted[node] for node in turn_nodes} == dict.fromkeys(turn_nodes, 1)

    index = TraceIndex.from_events(events)
    by_session = sessions(run.turns)
    assert len(by_session) > 1
    for session, expected in by_session.items():
        assert all(index.nodes[n].session_id == session for n in expected)
        heads = [n for n in expected if n not in index.prev]
        assert heads == [expected[0]], f"{session}: one chain starting at its first turn"
        chain = [expected[0]]
        while chain[-1] in index.next and len(chain) <= len(expected):
            chain.append(index.next[chain[-1]])
        assert chain == expected, f"{session}: NEXT must visit exactly its turns in turn_index order"

    # The held-back turn really arrived late: the edge that skipped it was removed.
    late_chain = by_session[LATE_SESSION]
    before, after = late_chain[LATE_INDEX - 1], late_chain[LATE_INDEX + 1]
    assert [r for r in removed_edges(events) if r[0] == "NEXT"] == [("NEXT", before, after)]

    for session, expected in by_session.items():
        for pos in sorted({0, 1, LATE_INDEX, len(expected) // 2, len(expected) - 1}):
            for k in (1, 3, len(expected)):
                want = expected[max(0, pos - k) : pos][::-1]
                assert index.backtrack(expected[pos], k) == want, f"{session} turn {pos}, k={k}"


def test_replay_into_empty_stores_is_identical(stack: StackInfo, locomo_run: LocomoRun, tmp_path: Path) -> None:
    config = locomo_run.config
    items = memory_items(config)
    assert len(items) == locomo_run.done.memory_events
    first = apply_to_fresh_stores(stack, items, tmp_path / "qdrant-a", "trace-replay-a")
    second = apply_to_fresh_stores(stack, items, tmp_path / "qdrant-b", "trace-replay-b")
    assert first == second
    worker = stored_hashes(stack, config.qdrant_path or config.data_dir / "qdrant", config.graph_name)
    assert worker == first, "the worker's own stores equal a replay of its log"
    replayed = graph_content(stack, "trace-replay-a")
    turns, chains = len(locomo_run.turns), len(sessions(locomo_run.turns))
    assert sum(1 for labels, _ in replayed.node_content.values() if "Event" in labels) == turns
    assert sum(1 for edge in replayed.edge_content.values() if edge[0] == "NEXT") == turns - chains


def reference_events(turns: list[tuple[ConversationTurn, EventRef]], memory_topic: str) -> list[MemoryEvent]:
    """The events a clean run derives from these logged turns: the worker's own steps, in process."""
    records = [Record(ref["topic"], ref["partition"], ref["offset"], 0, None, turn) for turn, ref in turns]
    return derive_turns(records, memory_topic)[0]


def kill_mid_batch(worker: WorkerProcess, config: EngramConfig, total: int) -> None:
    """SIGKILL the worker once it has ingested a third of the turns (batches of 10: it is then in
    the middle of ingesting and applying others)."""
    deadline = time.monotonic() + 60
    seen = progress(worker, config)
    while seen.ingested < total // 3 and time.monotonic() < deadline:
        time.sleep(0.02)
        seen = progress(worker, config)
    worker.kill()
    assert 0 < seen.ingested < total, f"the kill must land mid-run; the worker had ingested {seen.ingested}/{total}"


def wait_rebuilt(
    stack: StackInfo, worker: WorkerProcess, config: EngramConfig, expected: GraphContent, log: Path
) -> None:
    """Until the worker's graph holds every node and edge of ``expected`` and its metrics settle;
    on timeout FAIL with what is missing, gaps in the logged engram.memory, and the log's errors."""
    seen: list[Progress] = [progress(worker, config)]
    lacking: list[dict[str, Counter[str]]] = [{}]

    def settled() -> bool:
        before = seen[0]
        seen[0] = now = progress(worker, config)
        lacking[0] = missing(graph_content(stack, config.graph_name), expected)
        return not any(lacking[0].values()) and now.caught_up and now == before

    def state() -> object:
        gaps = offset_gaps(config, config.topics.memory)
        repaired = metric_value(worker.scrape() or "", "engram_offset_gaps_total")
        return (seen[0], "missing:", lacking[0], "memory log gaps:", gaps, "repaired:", repaired, log_errors(log))

    wait_until("the restarted worker to rebuild every node and edge", settled, 60, state)


def test_killed_worker_restarts_without_loss_or_duplicates(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    """One run, no retries. Restarts used to skip records about 1 time in 5 here: Faust's end of
    table recovery let input records into the agents' queues, then cleared the queues (measured
    with fetch and delivery logs; fixed in streams/repairs/recovery.py). Any offset an agent still never
    receives is read back from the broker before its batch (streams/repairs/gaps.py)."""
    crash_and_restart(stack, tmp_path, unique_name)


def crash_and_restart(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    """Kill a worker mid-batch, restart it, and compare its graph and vectors with a clean run's."""
    turns = locomo_turns("26") + locomo_turns(CONVERSATION)
    config = worker_config(stack, tmp_path, unique_name, batch_max=10)
    graphs = [config.graph_name, f"{unique_name}-reference"]
    try:
        first = WorkerProcess(config, tmp_path / "worker-1.log", topic_prefix=unique_name).start()
        try:
            assert publish_turns(config, turns) == len(turns)
            kill_mid_batch(first, config, len(turns))
        finally:
            first.stop()
        second_log = tmp_path / "worker-2.log"
        with WorkerProcess(config, second_log, topic_prefix=unique_name) as second:
            wait_until(
                "every turn in the event log",
                lambda: len(logged(config, config.topics.turns)) >= len(turns),
                60,
                lambda: (len(logged(config, config.topics.turns)), log_errors(second_log)),
            )
            reference = reference_events(logged_turns(config), config.topics.memory)
            items = [Record(config.topics.memory, 0, i, 0, None, e) for i, e in enumerate(reference)]
            expected_hashes = apply_to_fresh_stores(stack, items, tmp_path / "reference", graphs[1])
            expected = graph_content(stack, graphs[1])
            wait_rebuilt(stack, second, config, expected, second_log)

        got = graph_content(stack, config.graph_name)
        assert copies_over_one(got.nodes) == {}, "no node id held twice"
        assert copies_over_one(got.edges) == {}, "no edge id held twice"
        assert set(got.nodes) - set(expected.nodes) == set(), "no node a clean run would not have"
        assert set(got.edges) - set(expected.edges) == set(), "no edge a clean run would not have"
        assert set(expected.nodes) - set(got.nodes) == set(), "no node lost"
        assert set(expected.edges) - set(got.edges) == set(), "no edge lost"
        # The episodic graph (events, concepts, users) and every edge equal a clean run's, property
        # for property. Fact nodes are compared by id only: the facts step re-decides a redelivered
        # turn against a state that already holds its facts (decision skip_duplicate), which
        # rewrites the fact's decision/reason/rule properties (reported; issue of the facts step).
        assert got.nodes_without("Fact") == expected.nodes_without("Fact")
        assert got.edge_content == expected.edge_content
        assert stored_hashes(stack, config.data_dir / "qdrant", config.graph_name).qdrant == expected_hashes.qdrant
        offsets = [(e["partition"], e["offset"]) for e in logged(config, config.topics.turns)]
        assert len(offsets) == len(set(offsets)) == len(turns), "the event log holds each turn offset once"
        assert offset_gaps(config, config.topics.memory) == [], "the event log holds every memory event"
    finally:
        drop_graphs(stack, graphs)
