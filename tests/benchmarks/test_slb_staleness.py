"""`engram bench slb`'s staleness run at a small size: no hit serves a node dormant since its entry
was filled, nor an entry older than `max_age_events`, across a dream and a restart."""

from __future__ import annotations

from engram.benchmarks.slb_memory import Conversation
from engram.benchmarks.slb_staleness import measure
from engram.processors.slb import SLB_SMALL
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.records import NODE_UPSERTED
from tests.compiler.haystack import distractors
from tests.compiler.memory import embedder

USER = "u-stale"
QUESTIONS = [
    "Who adopted a grey cat from the shelter?", "When did we go hiking near the lake?",
    "What did we bake on Sunday?", "Which database holds the orders?", "Where is the pottery class?",
    "Who plays the violin in the orchestra?", "What colour is the new car?", "When is the dentist appointment?",
]  # fmt: skip


def conversation() -> Conversation:
    texts = distractors(80)
    events = []
    for i, text in enumerate(texts):
        node = node_upserted(f"t{i:03d}", "turn", "USER", 1_000 + i, text=text, user_id=USER)
        events.append(memory_event(USER, 1_000 + i, [], NODE_UPSERTED, node))
    ids = {f"t{i:03d}": text for i, text in enumerate(texts)}
    return Conversation(USER, events, ids, {}, [(q, frozenset()) for q in QUESTIONS])


def test_no_stale_hit_across_a_dream_and_a_restart() -> None:
    result = measure(conversation(), embedder(), SLB_SMALL)  # K = 16: the 8 questions stay cached
    phases = result["staleness"]
    assert isinstance(phases, dict)
    assert result["stale_hits"] == 0
    assert phases["fill"] == {"requests": 16, "hits": 8, "stale_hits": 0}  # asked twice: repeats hit
    assert phases["dream"]["made_dormant"] > 0
    assert phases["restart"]["hits"] > 0  # entries that still hold came back with the table
    assert phases["aged"]["hits"] == 0  # every entry filled before the new memory expired
