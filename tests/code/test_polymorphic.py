"""Seed 000 section 4.2.1: why does authorize() call the fraud check here and the blockchain there?

The structural path (seed by name, then HAS_METHOD / INHERITS / CALLS) returns every override and
the services they call, base first; a flat per-method vector baseline over the same code returns
the unrelated AuthService.authorize_user and misses the services.
"""

from __future__ import annotations

import numpy as np

from engram.processors.code.builder import CodeGraphBuilder
from engram.processors.code.graph import CodeGraph, code_identifiers, code_neighbourhood, seed_entities
from engram.processors.embedding import default_embedder
from tests.code.support import (
    BASE,
    CARD,
    CHAIN,
    CRYPTO,
    FRAUD,
    QUESTION,
    UNRELATED,
    WhitespaceCounter,
    fixture_changes,
)


def payment_graph() -> CodeGraph:
    graph = CodeGraph()
    graph.apply_all(CodeGraphBuilder(WhitespaceCounter()).apply_batch(fixture_changes()))
    return graph


def quals(graph: CodeGraph, ids: tuple[str, ...] | list[str]) -> list[str]:
    return [graph.nodes_by_id[i].properties["qualname"] for i in ids]


def test_the_question_names_authorize_only() -> None:
    assert code_identifiers(QUESTION) == ["authorize"]


def test_structural_path_returns_every_override_and_service_in_inheritance_order() -> None:
    graph = payment_graph()
    seeds = seed_entities(graph.nodes(), QUESTION)
    assert quals(graph, seeds) == [BASE, CARD, CRYPTO]  # exact name: authorize_user is no seed
    found = quals(graph, code_neighbourhood(graph, seeds, hops=1).node_ids)
    assert {BASE, CARD, CRYPTO, FRAUD, CHAIN} <= set(found)
    assert UNRELATED not in found and not any(q.startswith("auth.") for q in found)
    assert found.index(BASE) < found.index(CARD) < found.index(FRAUD)
    assert found.index(BASE) < found.index(CRYPTO) < found.index(CHAIN)
    assert found[0] == BASE


def test_from_the_base_method_alone_the_graph_finds_the_overrides() -> None:
    """Seed step 1 retrieves only PaymentProcessor.authorize; steps 2-4 walk to the rest."""
    graph = payment_graph()
    base_id = next(r.node_id for r in graph.nodes() if r.properties.get("qualname") == BASE and r.kind == "code_method")
    result = code_neighbourhood(graph, [base_id], hops=1, include_classes=True)
    found = quals(graph, result.node_ids)
    assert found[:2] == ["payments.base.PaymentProcessor", BASE]
    assert {CARD, CRYPTO, FRAUD, CHAIN, f"{FRAUD}.screen", f"{CHAIN}.confirm_transfer"} <= set(found)
    assert result.roles[graph_id(graph, CARD)] == "override"
    assert UNRELATED not in found


def graph_id(graph: CodeGraph, qualname: str) -> str:
    return next(r.node_id for r in graph.nodes() if r.properties.get("qualname") == qualname and r.kind != "code_chunk")


def test_flat_vector_baseline_over_method_chunks_misses_the_services() -> None:
    """Flat RAG as the seed describes it: each method body an independent chunk, top-k by cosine
    with the default embedder, k = the five things the answer needs."""
    graph = payment_graph()
    methods = sorted((r for r in graph.nodes() if r.kind in ("code_method", "code_function")), key=lambda r: r.node_id)
    bodies = [r.text.split("\n", 1)[1] for r in methods]  # drop our breadcrumb line: flat chunks have none
    embedder = default_embedder()
    scores = embedder.embed(bodies) @ embedder.embed([QUESTION])[0]
    top = [methods[i].properties["qualname"] for i in np.argsort(-scores, kind="stable")[:5]]
    assert UNRELATED in top  # the vocabulary twin ranks in
    covered = {
        need for need in (BASE, CARD, CRYPTO, FRAUD, CHAIN) if any(q == need or q.startswith(f"{need}.") for q in top)
    }
    assert covered == {BASE, CARD, CRYPTO}  # neither service (nor any of their methods) is reached


def test_code_identifiers_pick_code_looking_names_only() -> None:
    question = "How does `PaymentProcessor` use CreditCardProcessor.authorize and risk_score, and what calls it?"
    assert code_identifiers(question) == ["PaymentProcessor", "CreditCardProcessor.authorize", "risk_score"]
    graph = payment_graph()
    seeds = quals(graph, seed_entities(graph.nodes(), question))
    assert seeds == ["fraud.service.FraudCheckService.risk_score", "payments.base.PaymentProcessor", CARD]
