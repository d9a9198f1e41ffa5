"""The compiler uses what dreaming made: the archive on a cache miss, spreading activation from
consolidated nodes, and the TOC for time-anchored questions and when every index is down."""

from __future__ import annotations

from engram.processors.compiler import ContextCompiler
from engram.processors.embedding import default_embedder
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.processors.tokens import default_token_counter
from engram.schemas.events import edge_upserted, memory_event, node_upserted
from engram.schemas.records import (
    EDGE_UPSERTED,
    NODE_UPSERTED,
    CompiledContext,
    ContextRequest,
    EventRef,
    Layer,
    MemoryEvent,
)
from engram.streams.agents.ingest import group_by_key
from engram.streams.dream_step import DreamStep
from tests.e2e.test_dreaming_e2e import DETAIL, T0
from tests.streams.test_dream_step import CONFIG, memory_stream

DAY = 86_400_000


def dreamt_view(config: ViewConfig | None = None) -> tuple[MemoryView, list[MemoryEvent]]:
    from engram.processors.dreaming.dream import Dreamer

    records = memory_stream()
    step = DreamStep(Dreamer(CONFIG))
    _, dreams = step.process({}, group_by_key(step, records))
    view = MemoryView(config, embedder=default_embedder())
    memory = [r.value for r in records]
    view.apply(memory + dreams)
    return view, memory + dreams


def ask(view: MemoryView, query: str, user: str = "dana", layers: list[Layer] | None = None) -> CompiledContext:
    compiler = ContextCompiler(view, default_embedder(), default_token_counter())
    request: ContextRequest = {
        "request_id": "r", "user_id": user, "session_id": f"{user}-q", "query": query, "token_budget": 400,
        "authorized_layers": layers or ["USER"], "intent_hint": None, "agent_id": None,
        "event_time_ms": T0 + 13 * DAY,
    }  # fmt: skip
    return compiler.compile(request)


def texts(compiled: CompiledContext) -> list[str]:
    return [item["text"] for item in compiled["items"]]


def test_a_cache_miss_resolves_to_the_archived_detail_it_asks_about() -> None:
    view, _ = dreamt_view()
    detail = next(r.node_id for r in view.records() if r.text == DETAIL)
    assert view.is_dormant(detail) and not view.is_searchable(detail)
    assert DETAIL in texts(ask(view, "Which shop stocks Salomon hiking boots?"))
    assert DETAIL not in texts(ask(view, "How much water did I carry?"))  # no strong archive match: stays asleep


def ref(offset: int) -> EventRef:
    return {"topic": "engram.turns", "partition": 0, "offset": offset}


def planted(view: MemoryView, user: str, cited_user: str, layer: Layer = "USER") -> None:
    """A profile of "Quinn" for ``user`` that cites an episode of ``cited_user`` never naming Quinn."""
    episode = node_upserted(f"{cited_user}-ep", "event", layer, T0, text="The violin lesson moved to Tuesdays.",
                            user_id=cited_user, session_id=f"{cited_user}-s")  # fmt: skip
    profile = node_upserted(f"{user}-quinn", "profile", "USER", T0, text="Quinn: violin teacher, lessons weekly.",
                            user_id=user)  # fmt: skip
    events = [
        memory_event(cited_user, T0, [ref(900)], NODE_UPSERTED, episode),
        memory_event(user, T0, [ref(901)], NODE_UPSERTED, profile),
        memory_event(user, T0, [ref(900)], EDGE_UPSERTED, edge_upserted("ABOUT", f"{user}-quinn", f"{cited_user}-ep",
                                                                          "USER")),
    ]  # fmt: skip
    view.apply(events)


def test_a_profile_that_wins_brings_its_cited_episode_and_never_another_users() -> None:
    view, _ = dreamt_view()
    planted(view, "dana", "dana")
    assert "The violin lesson moved to Tuesdays." in texts(ask(view, "Who is Quinn?"))
    other, _ = dreamt_view()
    planted(other, "dana", "bob")
    assert "The violin lesson moved to Tuesdays." not in texts(ask(other, "Who is Quinn?"))


def test_a_time_anchored_question_is_narrowed_to_its_range_by_the_toc() -> None:
    view, _ = dreamt_view()
    compiled = ask(view, "What did I plan for the summit trail in January 2026?")
    assert any("time anchor" in f for f in compiled["fallbacks"])
    assert any("summit" in t for t in texts(compiled))


def test_with_every_index_down_the_agentic_toc_search_still_answers() -> None:
    view, _ = dreamt_view(ViewConfig(vector_index=False, text_index=False))
    compiled = ask(view, "summit trail morning")
    assert any("agentic TOC search" in f for f in compiled["fallbacks"])
    assert any("summit" in t.lower() for t in texts(compiled))
