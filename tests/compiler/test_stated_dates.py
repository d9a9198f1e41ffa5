"""The compiled context says the date a turn states: "yesterday" reads "(on 2023-11-13)"."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import BALANCED as HYBRID
from engram.processors.retrieval.hybrid import hybrid_search
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.processors.trace.builder import TraceBuilder, event_node_id
from tests.compiler.memory import counter, embedder, request
from tests.trace.turns import ref, turn

USER = "u1"  # tests.trace.turns' user; its turns are said on 2023-11-14 (UTC)
TURNS = [
    "I went to the support group and it was so powerful.",
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "My friends from the group are coming over for board games.",
    "The park near the office has lovely trees.",
]
DATED = event_node_id(USER, "s1-t1")
QUESTION = "When did I go to the support group?"


def _view() -> MemoryView:
    builder = TraceBuilder(embedder=embedder(), token_counter=counter())
    view = MemoryView(ViewConfig(vector_index=True))
    view.apply(builder.apply_batch([(turn(i, text), ref(i)) for i, text in enumerate(TURNS)]))
    return view


def test_the_turn_that_states_the_event_ranks_for_when() -> None:
    view = _view()
    query_vector = embedder().embed([QUESTION])[0]

    def scores(when_boost: float) -> dict[str, float]:
        config = replace(HYBRID, when_boost=when_boost)
        found = hybrid_search(view, QUESTION, 10, Viewer(USER), ["USER"], query_vector=query_vector, config=config)
        return {c.node_id: c.score for c in found.candidates}

    lifted, plain = scores(HYBRID.when_boost), scores(0.0)
    assert HYBRID.when_boost > 0 and max(lifted, key=lambda n: lifted[n]) == DATED
    assert lifted[DATED] == pytest.approx(plain[DATED] * (1 + HYBRID.when_boost))
    assert all(lifted[n] == pytest.approx(plain[n]) for n in plain if n != DATED)  # only the dated turn moves


def test_the_item_says_the_resolved_date_and_its_tokens_count_it() -> None:
    view = _view()
    out = ContextCompiler(view, embedder(), counter(), BALANCED).compile(request(QUESTION, 200, user_id=USER))
    items = {i["node_id"]: i for i in out["items"]}
    suffix = " (on 2023-11-13)"
    assert items[DATED]["text"] == TURNS[1] + suffix
    assert items[DATED]["tokens"] == counter().count(TURNS[1]) + counter().count(suffix)
    undated = [i for n, i in items.items() if n != DATED]
    assert undated and all("(on " not in i["text"] for i in undated)
    assert out["total_tokens"] == sum(i["tokens"] for i in out["items"]) <= 200
