"""Seed 004's benchmark graph (AgenticMemory v0.2, §5): the same shape, from a seeded generator.

``n`` nodes typed in turn Fact, Decision, Inference, Skill, Episode; the text "<topic> node_<i>
session_<i // 100>" over ten technical topics; session i // 100; confidence uniform in [0.1, 1);
a random 128-dimensional feature vector. Each node gets 3 out-edges to uniformly random other
nodes, typed uniformly among CAUSED_BY, SUPPORTS, RELATED_TO, CONTRADICTS and SUPERSEDES, weight
uniform in [0.1, 1): 300,000 edges at 100,000 nodes. Node times are one minute apart. All nodes
are in one user's USER layer (the principal the bench asks as).
"""

from __future__ import annotations

import numpy as np

from engram.processors.graph.store import GraphStore, NodeSpec
from engram.processors.graph.types import EdgeType, NodeType

TOPICS = (
    "API rate limit config",
    "database query optimization",
    "Redis caching strategy",
    "JWT token security",
    "Kubernetes deployment",
    "React component render",
    "ML model training",
    "network latency",
    "memory allocation",
    "testing regression",
)
NODE_TYPES = (NodeType.FACT, NodeType.DECISION, NodeType.INFERENCE, NodeType.SKILL, NodeType.EPISODE)
EDGE_TYPES = (EdgeType.CAUSED_BY, EdgeType.SUPPORTS, EdgeType.RELATED_TO, EdgeType.CONTRADICTS, EdgeType.SUPERSEDES)
USER = "bench-user"
DIM = 128
MINUTE_MS = 60_000


def node_id(i: int) -> str:
    return f"n{i}"


def generate(n: int, edges_per_node: int = 3, seed: int = 7, start_ms: int = 1_700_000_000_000) -> GraphStore:
    rng = np.random.default_rng(seed)
    store = GraphStore()
    confidence = rng.uniform(0.1, 1.0, n)
    vectors = rng.uniform(-1.0, 1.0, (n, DIM)).astype(np.float32)
    for i in range(n):
        text = f"{TOPICS[i % len(TOPICS)]} node_{i} session_{i // 100}"
        spec = NodeSpec(NODE_TYPES[i % 5], "USER", USER, f"session_{i // 100}", float(confidence[i]),
                        start_ms + i * MINUTE_MS, text)  # fmt: skip
        store.add_node(node_id(i), spec, vectors[i], "bench")
    targets = rng.integers(0, n, (n, edges_per_node))
    types = rng.integers(0, len(EDGE_TYPES), (n, edges_per_node))
    weights = rng.uniform(0.1, 1.0, (n, edges_per_node))
    for i in range(n):
        for j in range(edges_per_node):
            t = int(targets[i, j])
            if t != i:
                store.add_edge(f"e{i}-{j}", node_id(i), node_id(t), EDGE_TYPES[types[i, j]], float(weights[i, j]))
    return store
