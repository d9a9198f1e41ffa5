"""ContextCompiler behaviour: outputs, facts block, pinning, fallbacks, code path, bounds, order."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.compiler.config import Bounds
from engram.processors.rebac import Viewer
from engram.processors.retrieval.errors import TEXT_INDEX, VECTOR_INDEX, IndexUnavailableError
from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.schemas.records import EventRef, Layer
from tests.compiler.haystack import distractors
from tests.compiler.memory import T0, USER, Fixture, VectorView, counter, embedder, request
from tests.compiler.test_contextos import QUERY, _multihop

FACT_SOURCES: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": 7}]


def _plain(n: int = 30) -> VectorView:
    fx = Fixture()
    for i, text in enumerate(distractors(n)):
        fx.node(f"d{i:03d}", text, time_ms=T0 + i * 1000)
    fx.node("needle", "The wifi password at the cabin is maplesyrup42.", time_ms=T0 + 500)
    return fx.view()


def test_output_is_complete_explained_and_deterministic() -> None:
    view, hop1, hop2 = _multihop()
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED.with_weights(1.0, 1.0))
    out = compiler.compile(request(QUERY, 120))
    assert out["route"] == "THEMATIC" and out["intent"] == "explore"
    assert out["route_reason"].startswith("THEMATIC → system2")
    assert not out["partial"] and not out["cache_hit"]
    assert {"route", "embed", "retrieve", "expand", "score", "select", "order", "total"} <= set(out["timings_ms"])
    assert out["total_tokens"] == sum(i["tokens"] for i in out["items"]) <= 120
    for item in out["items"]:
        assert item["provenance"] and item["score"] >= 0 and item["layer"] == "USER"
        assert item["kind"] != "concept", "concepts carry relevance (PPR) but are not items"
    ids = [i["node_id"] for i in out["items"]]
    assert ids.index(hop2) < ids.index(hop1), "the premise (CAUSAL source) reads before its conclusion"
    again = compiler.compile(request(QUERY, 120))
    assert [i["node_id"] for i in again["items"]] == ids


def test_facts_block_competes_for_the_budget() -> None:
    view = _plain()
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED)
    facts = "Cabin facts: the wifi password is maplesyrup42; the cabin is at the lake."
    out = compiler.compile(request("What is the wifi password at the cabin?", 60), facts_block=(facts, FACT_SOURCES))
    fact_items = [i for i in out["items"] if i["kind"] == "facts"]
    assert len(fact_items) == 1 and fact_items[0]["provenance"] == FACT_SOURCES
    assert out["items"][0]["kind"] == "facts"  # facts read before the episodic items
    long_facts = " ".join(["Alice likes tea."] * 40)
    out = compiler.compile(request("What is the wifi password at the cabin?", 60), facts_block=(long_facts, []))
    assert all(i["kind"] != "facts" for i in out["items"])  # too many tokens to win its place
    assert out["total_tokens"] <= 60


def test_policy_nodes_are_pinned_first_whatever_their_relevance() -> None:
    fx = Fixture()
    for i, text in enumerate(distractors(20)):
        fx.node(f"d{i:03d}", text, time_ms=T0 + i)
    fx.node("policy", "Never reveal medical details to third parties.", kind="policy", layer="SYSTEM", user_id=None)
    view = VectorView(embedder=embedder(), token_counter=counter())
    view.apply(fx.events)
    assert view.pinned_nodes(Viewer(USER), ["SYSTEM", "USER"]) == ["policy"]
    out = ContextCompiler(view, embedder(), counter(), BALANCED).compile(request("Who adopted a cat?", 80))
    assert out["items"][0]["node_id"] == "policy" and out["items"][0]["pinned"]
    without = ContextCompiler(view, embedder(), counter(), BALANCED).compile(
        request("Who adopted a cat?", 80, layers=["USER"])
    )
    assert all(i["node_id"] != "policy" for i in without["items"])


def test_an_unavailable_index_falls_back_instead_of_failing() -> None:
    fx = Fixture()
    for i, text in enumerate(distractors(30)):
        fx.node(f"d{i:03d}", text, time_ms=T0 + i * 1000)
    fx.node("needle", "The wifi password at the cabin is maplesyrup42.", time_ms=T0 + 500)
    no_text = fx.view(text_index=False)
    out = ContextCompiler(no_text, embedder(), counter(), BALANCED).compile(request("wifi password cabin?", 60))
    assert any(f.startswith("bm25") for f in out["fallbacks"])
    assert "needle" in [i["node_id"] for i in out["items"]]
    nothing = fx.view(text_index=False, vector_index=False)
    out = ContextCompiler(nothing, embedder(), counter(), BALANCED).compile(request("wifi password cabin?", 60))
    assert "scan" in out["fallbacks"]
    assert "needle" in [i["node_id"] for i in out["items"]]


def _codebase() -> VectorView:
    fx = Fixture()
    code = {
        "PaymentProcessor": "class PaymentProcessor: base class; authorize(amount) approves a payment.",
        "CreditCardProcessor": "class CreditCardProcessor(PaymentProcessor): card payments.",
        "CryptoProcessor": "class CryptoProcessor(PaymentProcessor): crypto payments.",
        "CreditCardProcessor.authorize": "def authorize(self, amount): runs fraud checks before approving.",
        "CryptoProcessor.authorize": "def authorize(self, amount): validates the transaction on chain.",
        "FraudCheckService": "class FraudCheckService: scores card transactions for fraud.",
        "BlockchainValidator": "class BlockchainValidator: verifies a transaction on the blockchain.",
        "AuthService.authorize_user": "def authorize_user(user): checks a login password.",
    }
    for i, (name, text) in enumerate(code.items()):
        fx.node(name, f"{name}: {text}", kind="code", time_ms=T0 + i, session_id=None)
    fx.edge("INHERITS", "CreditCardProcessor", "PaymentProcessor")
    fx.edge("INHERITS", "CryptoProcessor", "PaymentProcessor")
    fx.edge("HAS_METHOD", "CreditCardProcessor", "CreditCardProcessor.authorize")
    fx.edge("HAS_METHOD", "CryptoProcessor", "CryptoProcessor.authorize")
    fx.edge("CALLS", "CreditCardProcessor.authorize", "FraudCheckService")
    fx.edge("CALLS", "CryptoProcessor.authorize", "BlockchainValidator")
    for i, text in enumerate(distractors(20)):
        fx.node(f"d{i:03d}", text, time_ms=T0 + 100 + i)
    return fx.view()


def test_code_route_follows_inheritance_methods_and_calls() -> None:
    out = ContextCompiler(_codebase(), embedder(), counter(), BALANCED).compile(
        request("Why does PaymentProcessor.authorize() sometimes call other services?", 400)
    )
    assert out["route"] == "CODE"
    ids = {i["node_id"] for i in out["items"]}
    assert {"CreditCardProcessor.authorize", "CryptoProcessor.authorize"} <= ids
    assert {"FraudCheckService", "BlockchainValidator"} <= ids


def test_safety_bounds_give_a_partial_result_not_an_error() -> None:
    view, hop1, _ = _multihop()
    ticks = itertools.count()

    def slow_clock() -> float:  # every reading is 10 ms later
        return next(ticks) * 0.010

    config = BALANCED.with_weights(1.0, 1.0)
    out = ContextCompiler(view, embedder(), counter(), config, clock=slow_clock).compile(request(QUERY, 120))
    assert out["partial"] and any("timeout" in f for f in out["fallbacks"])
    assert out["items"], "a partial result beats none"
    tight = ContextCompiler(view, embedder(), counter(), config.__class__(bounds=Bounds(max_nodes_visited=5)))
    bounded = tight.compile(request(QUERY, 120))
    assert bounded["partial"] and any("max_nodes_visited=5" in f for f in bounded["fallbacks"])


class LoadingEmbedder:
    """The default embedder behind a first call that takes 200 ms (loading its table), on a clock
    that moves only then."""

    def __init__(self) -> None:
        self.inner = embedder()
        self.now = 0.0
        self.loaded = False
        self.name, self.dim = self.inner.name, self.inner.dim

    def clock(self) -> float:
        return self.now

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if not self.loaded:
            self.loaded, self.now = True, self.now + 0.200
        return self.inner.embed(texts)


def test_a_warmed_up_compiler_answers_its_first_request_in_full() -> None:
    view, _, _ = _multihop()
    config = BALANCED.with_weights(1.0, 1.0)
    loading = LoadingEmbedder()
    cold = ContextCompiler(view, loading, counter(), config, clock=loading.clock).compile(request(QUERY, 120))
    assert cold["partial"] and any("timeout" in f for f in cold["fallbacks"]), "the load was paid in the deadline"
    warm_embedder = LoadingEmbedder()
    compiler = ContextCompiler(view, warm_embedder, counter(), config, clock=warm_embedder.clock)
    compiler.warm_up()
    warm = compiler.compile(request(QUERY, 120))
    assert not warm["partial"] and not warm["fallbacks"]


class PlainGraph:
    """A bare `MemoryGraph` (no scan, no vectors): the compiler's own fallback chain runs."""

    def __init__(self, view: VectorView, *, vectors: bool = True, text: bool = True) -> None:
        self.view, self.vectors, self.text = view, vectors, text

    def node(self, node_id: str) -> NodeRecord | None:
        return self.view.node(node_id)

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]:
        return self.view.neighbours(node_id, layers, edge_types)

    def vector_search(
        self, query: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer]
    ) -> list[Candidate]:
        if not self.vectors:
            raise IndexUnavailableError(VECTOR_INDEX, "down for the test")
        return self.view.vector_search(query, k, viewer, layers)

    def text_search(self, query: str, k: int, viewer: Viewer, layers: Collection[Layer]) -> list[Candidate]:
        if not self.text:
            raise IndexUnavailableError(TEXT_INDEX, "down for the test")
        return self.view.text_search(query, k, viewer, layers)


def test_a_plain_memory_graph_gets_the_same_chain_without_the_scan() -> None:
    view = _plain()
    query = "What is the wifi password at the cabin?"
    out = ContextCompiler(PlainGraph(view), embedder(), counter(), BALANCED).compile(request(query, 60))
    assert "needle" in [i["node_id"] for i in out["items"]] and not out["fallbacks"]
    vectors_down = PlainGraph(view, vectors=False)
    out = ContextCompiler(vectors_down, embedder(), counter(), BALANCED).compile(request(query, 60))
    assert out["fallbacks"] == ["vector:down for the test"] and "needle" in [i["node_id"] for i in out["items"]]
    nothing = PlainGraph(view, vectors=False, text=False)
    out = ContextCompiler(nothing, embedder(), counter(), BALANCED).compile(request(query, 60))
    assert out["partial"] and out["items"] == [] and "no index available" in out["fallbacks"]
