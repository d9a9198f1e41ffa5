"""Compiler settings and the FAST / BALANCED / THOROUGH presets.

value = α·relevance + β·PPR·decay (seed 001 §6.1), where relevance is the retrieval score normalized
to [0, 1] within the request, PPR is normalized to [0, 1] by its maximum, and decay is S(t).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

from engram.processors.compiler.decay import CONVERSATIONAL_DECAY, DecayConfig
from engram.processors.compiler.knapsack import KnapsackConfig
from engram.processors.compiler.ppr import PprConfig
from engram.schemas.records import PINNED_KINDS

SYSTEM2_EDGES: Final = ("NEXT", "CAUSAL", "REF", "CHILD_OF", "MENTIONS", "ABOUT", "SUPPORTS")
CODE_EDGES: Final = ("CONTAINS", "CALLS", "INHERITS", "HAS_METHOD", "IMPORTS", "DEFINES", "TOUCHES")
ORDER_EDGES: Final = ("NEXT", "CAUSAL")
# PPR edge weights by type (probabilities, see PprConfig.substochastic): causal and code structure
# carry relevance fully, concept references strongly, temporal adjacency weakly.
EDGE_WEIGHTS: Final = MappingProxyType(
    {"CAUSAL": 1.0, "REF": 0.8, "CHILD_OF": 0.5, "NEXT": 0.25, "MENTIONS": 0.8, "ABOUT": 0.8, "SUPPORTS": 0.8}
    | dict.fromkeys(CODE_EDGES, 1.0)
)


@dataclass(frozen=True, slots=True)
class Bounds:
    """Seed 002's safety bounds for graph expansion; a partial result beats none."""

    max_hops: int = 2
    max_nodes_visited: int = 200
    timeout_ms: float = 50.0
    fanout: int = 16


@dataclass(frozen=True, slots=True)
class CompilerConfig:
    """
    alpha, beta: weights of relevance and of the graph term (PPR·decay).
    relevance_power: γ in relevance = (score / best score)^γ. Fused retrieval scores are compressed
        (the 50th candidate often keeps half the top score), so the knapsack would trade one strong
        long turn for two weak short ones; γ = 2 restores the contrast. Measured on LoCoMo
        (budget 1,000 tokens, static embedder): evidence recall 0.785 → 0.799 on the two held-out
        conversations (42, 43), 0.789 → 0.815 on the three used to choose it (26, 30, 41).
    seeds_k: candidates per retriever (vector, BM25) before fusion; rrf_k: RRF's k.
    seed_count: fused candidates that seed the expansion and the PPR.
    factual_hops: hops System 1 still expands (so PPR sees a neighbourhood), System 2 uses bounds.
    facts_bonus: a prior added to the facts block's value.
    edge_weights: PPR weight per edge type, times the edge's own weight (`default_edge_weight` else).
    navigation_kinds: kinds that carry relevance through the graph (PPR, expansion) but are never
        items themselves: a Trace concept's text is a truncated copy of its founding turn; a TOC
        period's summary repeats its episodes.
    archive_top: a dormant node answers a request (and is re-awakened) only among the first this
        many results of the search over the whole memory (live and archived; seed 000 §5.3).
    """

    alpha: float = 1.0
    beta: float = 0.3
    relevance_power: float = 2.0
    seeds_k: int = 50
    rrf_k: int = 60
    seed_count: int = 20
    factual_hops: int = 1
    bounds: Bounds = field(default_factory=Bounds)
    ppr: PprConfig = field(default_factory=lambda: PprConfig(substochastic=True))
    edge_weights: Mapping[str, float] = field(default_factory=lambda: EDGE_WEIGHTS)
    default_edge_weight: float = 0.5
    decay: DecayConfig = CONVERSATIONAL_DECAY
    knapsack: KnapsackConfig = field(default_factory=KnapsackConfig)
    system2_edges: tuple[str, ...] = SYSTEM2_EDGES
    code_edges: tuple[str, ...] = CODE_EDGES
    order_edges: tuple[str, ...] = ORDER_EDGES
    pinned_kinds: tuple[str, ...] = PINNED_KINDS
    navigation_kinds: tuple[str, ...] = ("concept", "toc")
    archive_top: int = 5
    facts_bonus: float = 0.1
    use_slb: bool = True

    def with_weights(self, alpha: float, beta: float) -> CompilerConfig:
        return replace(self, alpha=alpha, beta=beta)


BALANCED: Final = CompilerConfig()
FAST: Final = CompilerConfig(
    seeds_k=20,
    seed_count=10,
    factual_hops=0,
    bounds=Bounds(max_hops=1, max_nodes_visited=60, timeout_ms=10.0, fanout=8),
    ppr=PprConfig(tolerance=1e-6, max_iterations=30, substochastic=True),
    knapsack=KnapsackConfig(exact_cells=50_000, swap_rounds=1),
)
THOROUGH: Final = CompilerConfig(
    seeds_k=100,
    seed_count=40,
    factual_hops=1,
    bounds=Bounds(max_hops=3, max_nodes_visited=1000, timeout_ms=250.0, fanout=32),
    knapsack=KnapsackConfig(exact_cells=2_000_000, swap_rounds=5),
)
PRESETS: Final = {"FAST": FAST, "BALANCED": BALANCED, "THOROUGH": THOROUGH}
