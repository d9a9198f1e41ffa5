"""A node's use reaches the view through the log (processors/retrieval/access.py): every compiled
context that held it counts once, its last access is the latest, a replay gives the same values,
and the decay score reads them."""

from __future__ import annotations

from engram.processors.compiler.config import BALANCED
from engram.processors.compiler.scoring import score_pool
from engram.processors.retrieval.access import ACCESS_COUNT, LAST_ACCESS_MS
from engram.processors.retrieval.view import MemoryView
from engram.schemas.events import fact_accessed, memory_event
from engram.schemas.records import FACT_ACCESSED, MemoryEvent
from tests.retrieval.builders import USER, Events

DAY_MS = 86_400_000


def use(view: MemoryView, node_id: str) -> tuple[str | None, str | None]:
    record = view.node(node_id)
    assert record is not None
    return record.properties.get(ACCESS_COUNT), record.properties.get(LAST_ACCESS_MS)


def applied(events: list[MemoryEvent]) -> MemoryView:
    view = MemoryView()
    view.apply(events)
    return view


def test_each_context_that_held_a_node_counts_once_and_the_latest_is_its_last_access() -> None:
    log = Events().node("n1", "ada moved to berlin").node("n2", "ada likes tea").node("n3", "unused")
    log.accessed("n1", at_ms=100).accessed("n1", "n2", at_ms=50)
    view = applied(log.events)
    assert use(view, "n1") == ("2", "100")
    assert use(view, "n2") == ("1", "50")
    assert use(view, "n3") == (None, None)


def test_a_replay_gives_the_same_use_however_the_log_is_batched() -> None:
    log = Events().node("n1", "ada moved to berlin").accessed("n1", at_ms=10).node("n2", "tea")
    log.accessed("n1", "n2", at_ms=20).node("n1", "ada moved to berlin, again").accessed("n2", at_ms=30)
    whole = applied(log.events)
    batched = MemoryView()
    for event in log.events:
        batched.apply([event])
    assert [whole.node(n) for n in ("n1", "n2")] == [batched.node(n) for n in ("n1", "n2")]
    assert use(whole, "n1") == ("2", "20")  # a re-upsert keeps the node's use


def test_an_access_before_the_node_arrives_counts_and_a_removal_forgets_it() -> None:
    log = Events().accessed("shared-1", at_ms=5).node("shared-1", "the team's runbook", layer="TEAM", user_id=None)
    view = applied(log.events)
    assert use(view, "shared-1") == ("1", "5")
    view.apply(Events(offset=100).remove("shared-1").node("shared-1", "a new runbook", user_id=None).events)
    assert use(view, "shared-1") == (None, None)


def test_an_access_counts_as_a_change_only_for_nodes_the_view_holds() -> None:
    view = MemoryView()
    assert view.apply(Events().node("n1", "x").accessed("n1", at_ms=1).accessed("gone", at_ms=2).events) == 2


def test_the_facts_a_facts_block_showed_are_accessed() -> None:
    log = Events().fact("f1", "ada", "lives_in", "berlin")
    read = memory_event(USER, 70, [], FACT_ACCESSED, fact_accessed(USER, ["f1"], "r1"))
    view = applied([*log.events, read])
    assert use(view, "f1") == ("1", "70")


def test_the_decay_score_ranks_a_used_node_above_an_equally_old_unused_one() -> None:
    log = Events().node("used", "ada moved to berlin").node("unused", "ada likes tea")
    view = applied(log.accessed("used", at_ms=30 * DAY_MS).events)
    records = [r for n in ("used", "unused") if (r := view.node(n)) is not None]
    scored = {s.node_id: s.decay for s in score_pool(records, {}, [], {}, 31 * DAY_MS, BALANCED)}
    assert scored["used"] > scored["unused"]
