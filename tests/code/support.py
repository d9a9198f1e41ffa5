"""Shared helpers of the Code Brain tests: a deterministic token counter and CodeChange builders."""

from __future__ import annotations

from pathlib import Path

from engram.processors.code.builder import CodeGraphBuilder
from engram.processors.code.graph import CodeGraph
from engram.schemas.records import CodeChange, EventRef

FIXTURES = Path(__file__).parent / "fixtures"
POLYMORPHIC = FIXTURES / "polymorphic"
REPO = "acme/payments"

# Seed 000 section 4.2.1 over POLYMORPHIC: the question, the entities that answer it (REQUIRED), and
# the one that shares its vocabulary but answers nothing (UNRELATED).
QUESTION = "Why does authorize() sometimes call the fraud-check service and sometimes the blockchain service?"
BASE = "payments.base.PaymentProcessor.authorize"
CARD = "payments.credit_card.CreditCardProcessor.authorize"
CRYPTO = "payments.crypto.CryptoProcessor.authorize"
FRAUD = "fraud.service.FraudCheckService"
CHAIN = "chain.validator.BlockchainValidator"
REQUIRED = (BASE, CARD, CRYPTO, FRAUD, CHAIN)
UNRELATED = "auth.service.AuthService.authorize_user"


class WhitespaceCounter:
    """Counts whitespace-separated words: deterministic, fast, close enough for chunking tests."""

    def count(self, text: str) -> int:
        return len(text.split())


def change(
    path: str,
    content: str,
    *,
    repo: str = REPO,
    language: str = "",
    deleted: bool = False,
    parents: list[str] | None = None,
    user_id: str | None = None,
    change_id: str = "c1",
) -> CodeChange:
    return {
        "change_id": change_id,
        "repo": repo,
        "path": path,
        "language": language,
        "commit": "abc123",
        "content": content,
        "deleted": deleted,
        "event_time_ms": 1_700_000_000_000,
        "layer": "ORGANIZATION",
        "causal_parent_ids": parents or [],
        "user_id": user_id,
        "session_id": None,
    }


def ref(offset: int, topic: str = "engram.code") -> EventRef:
    return {"topic": topic, "partition": 0, "offset": offset}


def fixture_changes(root: Path = POLYMORPHIC) -> list[tuple[CodeChange, EventRef]]:
    """Every .py file under ``root`` as a CodeChange, paths relative to ``root``, in sorted order."""
    files = sorted(p for p in root.rglob("*.py"))
    return [(change(p.relative_to(root).as_posix(), p.read_text("utf-8")), ref(i)) for i, p in enumerate(files)]


def graph_of(files: dict[str, str], repo: str = REPO) -> tuple[CodeGraphBuilder, CodeGraph]:
    builder = CodeGraphBuilder(WhitespaceCounter())
    graph = CodeGraph()
    graph.apply_all(
        builder.apply_batch([(change(p, text, repo=repo), ref(i)) for i, (p, text) in enumerate(files.items())])
    )
    return builder, graph


def qualnames(graph: CodeGraph, src_qual: str, edge_type: str) -> set[tuple[str, str]]:
    """(kind, qualname) of the targets of ``edge_type`` edges leaving the entity named ``src_qual``."""
    out: set[tuple[str, str]] = set()
    for record in graph.nodes():
        if record.properties.get("qualname") == src_qual and record.kind != "code_chunk":
            for n in graph.neighbours(record.node_id, edge_types=(edge_type,)):
                target = graph.node(n.node_id)
                if n.outgoing and target is not None:
                    out.add((target.kind, target.properties.get("qualname", "")))
    return out
