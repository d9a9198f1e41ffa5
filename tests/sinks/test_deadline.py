"""The compile path's blocking calls (sinks/deadline.py): a call is waited for at most its share of
the request's budget, a late one is abandoned (or cancelled before it starts), a caller with calls
still running fails at once, and a late remote embedder makes the compiler answer lexically."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.embedding.base import Vectors
from engram.sinks.deadline import BlockingCalls, BlockingCallsConfig, DeadlineExceededError
from engram.sinks.embedding_http import DeadlineEmbedder, EmbeddingServiceError
from engram.sinks.llm_http import DeadlineChat, LLMDeadlineError
from tests.compiler.memory import Fixture, counter, embedder, request


@pytest.fixture
def calls() -> Iterator[BlockingCalls]:
    pool = BlockingCalls(BlockingCallsConfig(workers=2, max_running=1, default_timeout_s=1.0))
    yield pool
    pool.close()


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Held calls wait on it; it opens at the end so nothing outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_a_call_returns_its_value_or_raises_its_own_error(calls: BlockingCalls) -> None:
    assert calls.call("store", lambda: 42) == 42

    def fail() -> int:
        msg = "refused"
        raise ValueError(msg)

    with pytest.raises(ValueError, match="refused"):
        calls.call("store", fail)
    assert calls.running("store") == 0


def test_a_late_call_is_abandoned_after_its_share_of_the_remaining_budget(
    calls: BlockingCalls, gate: threading.Event
) -> None:
    started = time.perf_counter()
    with calls.within(0.2), pytest.raises(DeadlineExceededError, match="store timed out after") as caught:
        calls.call("store", lambda: gate.wait(5.0), share=0.5)
    waited_s = time.perf_counter() - started
    assert 0.09 <= waited_s < 0.2, "half of the 200 ms budget"
    assert 90 <= caught.value.waited_ms < 200 and not caught.value.busy
    assert calls.running("store") == 1, "the abandoned call still runs on its pool thread"
    with pytest.raises(DeadlineExceededError, match="store busy") as busy:
        calls.call("store", lambda: 1)
    assert busy.value.busy, "no second call queued behind a store that is not answering"
    assert calls.call("router", lambda: "ok") == "ok", "another caller is not held up"
    gate.set()
    deadline = time.monotonic() + 2.0
    while calls.running("store") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls.call("store", lambda: 2) == 2, "usable again once the abandoned call ended"


def test_a_call_that_never_started_is_cancelled_and_not_counted(gate: threading.Event) -> None:
    pool = BlockingCalls(BlockingCallsConfig(workers=1, max_running=2))
    ran: list[str] = []
    try:
        with pool.within(0.05):
            with pytest.raises(DeadlineExceededError):
                pool.call("a", lambda: gate.wait(5.0))  # holds the only pool thread
            with pytest.raises(DeadlineExceededError):
                pool.call("b", lambda: ran.append("b"))  # queued behind it, never started
        assert pool.running("b") == 0, "the cancelled call is not counted as running"
    finally:
        gate.set()
        pool.close()
    assert ran == [], "a cancelled call never runs"


def test_no_time_left_fails_without_calling_and_outside_a_request_the_default_applies(calls: BlockingCalls) -> None:
    ran: list[int] = []
    with calls.within(0.0), pytest.raises(DeadlineExceededError, match="after 0 ms"):
        calls.call("store", lambda: ran.append(1))
    assert ran == []
    assert calls.remaining_s() == 1.0
    with calls.within(0.5):
        assert 0.4 < calls.remaining_s() <= 0.5
        with calls.within(0.1):
            assert calls.remaining_s() <= 0.1
        assert calls.remaining_s() > 0.1, "an inner deadline ends with its block"


class SlowEmbedder:
    """A remote embedder stand-in: the shipped model's vectors, after ``delay_s``."""

    def __init__(self, gate: threading.Event, delay_s: float) -> None:
        self.inner = embedder()
        self.gate = gate
        self.delay_s = delay_s

    @property
    def name(self) -> str:
        return "slow"

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.gate.wait(self.delay_s)
        return self.inner.embed(texts)


def test_a_late_embedder_makes_the_compiler_answer_from_the_lexical_index(
    calls: BlockingCalls, gate: threading.Event
) -> None:
    memory = Fixture()
    memory.node("t1", "The garden flooded after the big storm last week.")
    memory.node("t2", "We deploy the release on Friday.")
    view = memory.view()
    late = DeadlineEmbedder(SlowEmbedder(gate, 5.0), calls)
    with calls.within(0.1), pytest.raises(EmbeddingServiceError, match="embedder timed out"):
        late.embed(["x"])
    gate.set()  # the abandoned call ends
    slow = DeadlineEmbedder(SlowEmbedder(threading.Event(), 0.3), calls)
    compiler = ContextCompiler(view, slow, counter(), BALANCED)
    while calls.running("embedder"):
        time.sleep(0.01)
    with calls.within(BALANCED.bounds.timeout_ms / 1000.0):
        compiled = compiler.compile(request("what happened to the garden in the storm?", 400))
    assert compiled["fallbacks"][0].startswith("embedder failed (EmbeddingServiceError: embedder timed out after")
    assert compiled["fallbacks"][0].endswith("lexical search only")
    assert [item["node_id"] for item in compiled["items"]][:1] == ["t1"], "BM25 still finds the garden turn"
    assert not compiled["cache_hit"]
    while calls.running("embedder"):  # let the abandoned call end before the pool closes
        time.sleep(0.01)


class SlowChat:
    def __init__(self, gate: threading.Event) -> None:
        self.gate = gate

    def complete(self, body: dict[str, object]) -> str:
        self.gate.wait(5.0)
        return "{}"


def test_a_late_chat_call_is_a_typed_transport_error(calls: BlockingCalls, gate: threading.Event) -> None:
    chat = DeadlineChat(SlowChat(gate), calls)
    started = time.perf_counter()
    with calls.within(0.1), pytest.raises(LLMDeadlineError, match="LLM router timed out after"):
        chat.complete({"messages": []})
    assert time.perf_counter() - started < 0.1, "half of the 100 ms budget, not the call's 5 s"
