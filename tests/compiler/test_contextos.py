"""ContextOS experiments (seed 001 §7) as tests: needle-in-a-haystack and the multi-hop ablation."""

from __future__ import annotations

import pytest

from engram.processors.compiler import BALANCED, CompilerConfig, ContextCompiler
from engram.schemas.records import CompiledContext
from tests.compiler.haystack import NEEDLES, distractors
from tests.compiler.memory import DAY_MS, T0, Fixture, VectorView, counter, embedder, request


def _haystack(needle: str) -> tuple[VectorView, str]:
    fx = Fixture()
    previous: str | None = None
    for i, text in enumerate(distractors(100)):
        node = fx.node(f"d{i:03d}", text, time_ms=T0 + i * 60_000, session_id=f"s{i // 10}")
        if previous is not None and i % 10:
            fx.edge("NEXT", previous, node)
        previous = node
    needle_id = fx.node("needle", needle, time_ms=T0 + 37 * 60_000, session_id="s3")
    return fx.view(), needle_id


@pytest.mark.parametrize(("needle", "query"), NEEDLES)
def test_needle_in_a_haystack_is_recalled_in_200_tokens(needle: str, query: str) -> None:
    view, needle_id = _haystack(needle)
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED)
    out = compiler.compile(request(query, 200))
    ids = [item["node_id"] for item in out["items"]]
    assert needle_id in ids
    assert out["total_tokens"] <= 200
    needle_item = next(i for i in out["items"] if i["node_id"] == needle_id)
    assert needle_item["provenance"], "every item carries the events it came from"


# --- the multi-hop ablation ------------------------------------------------------------------------

HOP1 = "Project Apollo lists one dependency: the Hermes ingestion library, which does all of its data loading."
HOP2 = "Hermes was rewritten last quarter in Rust to guarantee memory safety after two buffer overflows."
QUERY = "How is Project Apollo related to its dependencies?"
APOLLO_NOISE = (
    "Project Apollo kickoff meeting was held in the Berlin office with the whole team.",
    "The Project Apollo dashboard colours were changed to dark blue after user feedback.",
    "Project Apollo standups moved to ten in the morning.",
    "Project Apollo has a new logo with a stylised rocket.",
    "Someone asked whether Project Apollo will have a mobile app next year.",
    "The Apollo project wiki page lists the on-call rotation for the related services.",
    "Dependencies of the old billing project were upgraded by the platform team.",
    "The team related the Apollo launch party photos in the shared drive.",
)


def _multihop() -> tuple[VectorView, str, str]:
    """hop1 (matches the query) -CAUSAL/REF-> hop2 (shares no words with it); the Apollo remarks
    are scattered over everyday sessions, as they would come up in real conversations."""
    fx = Fixture()
    hop1 = fx.node("hop1", HOP1, time_ms=T0)
    hop2 = fx.node("hop2", HOP2, time_ms=T0 - DAY_MS // 2, session_id="s-hermes")
    hermes = fx.node("c-hermes", "Hermes", kind="concept", session_id=None)
    fx.edge("REF", hop1, hermes)
    fx.edge("REF", hop2, hermes)
    fx.edge("CAUSAL", hop2, hop1)
    filler = iter(distractors(48))
    for s, remark in enumerate(APOLLO_NOISE):
        texts = [next(filler), next(filler), remark, next(filler), next(filler), next(filler)]
        previous: str | None = None
        for i, text in enumerate(texts):
            node = fx.node(f"n{s}-{i}", text, time_ms=T0 + (s * 6 + i + 1) * 60_000, session_id=f"s{s}")
            if previous is not None:
                fx.edge("NEXT", previous, node)
            previous = node
    return fx.view(), hop1, hop2


def _found(out: CompiledContext, *ids: str) -> float:
    got = {item["node_id"] for item in out["items"]}
    return sum(1 for i in ids if i in got) / len(ids)


def ablation(budget: int = 120) -> dict[str, float]:
    view, hop1, hop2 = _multihop()
    configs: dict[str, CompilerConfig] = {
        "vector_only": BALANCED.with_weights(alpha=1.0, beta=0.0),
        "graph_only": BALANCED.with_weights(alpha=0.0, beta=1.0),
        "hybrid": BALANCED.with_weights(alpha=1.0, beta=1.0),
    }
    results: dict[str, float] = {}
    for name, config in configs.items():
        out = ContextCompiler(view, embedder(), counter(), config).compile(request(QUERY, budget))
        results[name] = _found(out, hop1, hop2)
        results[f"{name}_hop2"] = _found(out, hop2)
    return results


def test_multihop_ablation_hybrid_finds_both_hops_vector_only_misses_the_second() -> None:
    results = ablation()
    print("multi-hop ablation recall:", results)
    assert results["hybrid"] == 1.0
    assert results["vector_only_hop2"] == 0.0
    assert results["vector_only"] == 0.5
