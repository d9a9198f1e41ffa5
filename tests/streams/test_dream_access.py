"""Use it or lose it, through the dream step (streams/dream_step.py): a NodesAccessed on engram.memory
(a compiled context held the episode) restarts the episode's age, so dreaming makes it dormant a
T_decay after its last use, not after its turn; replays dream the same whatever the batching."""

from __future__ import annotations

from engram.processors.dreaming.config import DAY_MS
from engram.processors.dreaming.dream import Dreamer
from engram.schemas.changes import change_as
from engram.schemas.events import memory_event, nodes_accessed
from engram.schemas.record import Record
from engram.schemas.records import NODES_ACCESSED, EventRef, MemoryEvent, NodeDormant
from engram.streams.agents.ingest import group_by_key
from engram.streams.dream_step import DreamStep
from tests.e2e.test_dreaming_e2e import DETAIL
from tests.streams.test_dream_step import CONFIG, MEMORY, memory_stream, read, run

REQUEST: EventRef = {"topic": "engram.context.requests", "partition": 0, "offset": 0}


def detail_id() -> str:
    memory = read(run(memory_stream())[1])
    return next(e.node_id for e in memory.graph.episodes.values() if e.text == DETAIL)


def dormant_at(events: list[MemoryEvent], node_id: str) -> list[int]:
    return [
        e["event_time_ms"] for e in events if (d := change_as(e, NodeDormant)) is not None and d["node_id"] == node_id
    ]


def with_access(records: list[Record[MemoryEvent]], node_id: str, at_ms: int) -> list[Record[MemoryEvent]]:
    """engram.memory with a compile's NodesAccessed at ``at_ms``, after the records up to that time."""
    access = memory_event("dana", at_ms, [REQUEST], NODES_ACCESSED, nodes_accessed([node_id], "q1"))
    at = max(i for i, r in enumerate(records) if r.value["event_time_ms"] <= at_ms) + 1
    values = [r.value for r in records[:at]] + [access] + [r.value for r in records[at:]]
    return [Record(MEMORY, 0, i, 0, None, v) for i, v in enumerate(values)]


def test_a_used_episode_is_forgotten_a_t_decay_after_its_last_use() -> None:
    detail = detail_id()
    plain, _, _ = run(memory_stream())
    (forgotten,) = dormant_at(plain, detail)
    turn = read(run(memory_stream())[1]).graph.episodes[detail].time_ms
    used_at = forgotten - DAY_MS // 2  # in use half a day before the dream that forgot it
    assert used_at > turn
    records = with_access(memory_stream(), detail, used_at)
    events, states, _ = run(records)
    (later,) = dormant_at(events, detail)
    assert later > forgotten and later - used_at > DAY_MS  # T_decay (a day here) after its last use
    assert read(states).graph.episodes[detail].last_access_ms == used_at


def test_replays_with_accesses_dream_the_same_whatever_the_batching_and_restarts() -> None:
    detail = detail_id()
    (forgotten,) = dormant_at(run(memory_stream())[0], detail)
    records = with_access(memory_stream(), detail, forgotten - DAY_MS // 2)
    whole, states, _ = run(records)
    assert run(records, batch=7)[0] == whole
    again, restarted, _ = run(records, batch=5, restart=True)
    assert again == whole
    assert read(restarted).graph.to_dict() == read(states).graph.to_dict()


def test_a_read_is_written_only_when_it_moves_an_episodes_last_use() -> None:
    detail = detail_id()
    records = memory_stream()
    _, states, _ = run(records)
    step = DreamStep(Dreamer(CONFIG))
    at_ms = records[-1].value["event_time_ms"]
    reads = [memory_event("dana", at_ms, [REQUEST], NODES_ACCESSED, nodes_accessed([detail], "q1"))]
    stale = memory_event("dana", at_ms - DAY_MS, [REQUEST], NODES_ACCESSED, nodes_accessed([detail], "q0"))
    elsewhere = memory_event("dana", at_ms, [REQUEST], NODES_ACCESSED, nodes_accessed(["a-team-runbook"], "q2"))
    batch = [Record(MEMORY, 0, len(records) + i, 0, None, e) for i, e in enumerate([*reads, stale, elsewhere])]
    writes, events = step.process(states, group_by_key(step, batch))
    assert events == [] and writes and all(w.key.startswith("dana") for w in writes)  # no schedule rewrite
    states.update({w.key: w.state for w in writes})
    again = [Record(MEMORY, 0, len(records) + 3 + i, 0, None, e) for i, e in enumerate([*reads, stale, elsewhere])]
    assert step.process(states, group_by_key(step, again)) == ([], [])  # nothing moved: nothing written
    assert read(states).graph.episodes[detail].last_access_ms == at_ms
    # Requests within the hour after a use move nothing either: a busy session's requests do not
    # rewrite the memory per request (retrieval/access.py: ACCESS_STEP_MS); the next hour's do.
    for offset, moved in ((59 * 60_000, False), (60 * 60_000, True)):
        later = memory_event("dana", at_ms + offset, [REQUEST], NODES_ACCESSED, nodes_accessed([detail], f"q{offset}"))
        writes, _ = step.process(states, group_by_key(step, [Record(MEMORY, 0, len(records) + 9, 0, None, later)]))
        assert bool(writes) == moved
    states.update({w.key: w.state for w in writes})
    assert read(states).graph.episodes[detail].last_access_ms == at_ms + 60 * 60_000


def test_a_first_use_writes_a_small_use_part_not_the_episodes_chunk() -> None:
    """The last access lives in a use part per episodes' chunk (records.py: USE_PREFIX): a first use
    rewrites that, not the chunk's 64 episodes and their texts; read back, the memory holds it."""
    detail = detail_id()
    records = memory_stream()
    _, states, _ = run(records)
    step = DreamStep(Dreamer(CONFIG))
    at_ms = records[-1].value["event_time_ms"]
    used = memory_event("dana", at_ms, [REQUEST], NODES_ACCESSED, nodes_accessed([detail], "q1"))
    writes, _ = step.process(states, group_by_key(step, [Record(MEMORY, 0, len(records), 0, None, used)]))
    written = {w.key.split("\x00")[1].split("/")[0] for w in writes if "\x00" in w.key}
    assert written == {"u0"}, written  # the use part of the episode's chunk, and the head
    states.update({w.key: w.state for w in writes})
    assert read(states).graph.episodes[detail].last_access_ms == at_ms
