"""CodeChange -> only the MemoryEvents for what changed; the rest of the graph is left alone."""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest

from engram.processors.code.builder import CodeGraphBuilder
from engram.processors.code.graph import CodeGraph
from engram.processors.code.model import JSONDict, UnsupportedLanguageError
from engram.processors.code.state import RepoCodeState
from engram.processors.dreaming.graph import DreamGraph
from engram.processors.trace.builder import event_node_id
from engram.schemas.changes import change_as
from engram.schemas.records import EDGE_REMOVED, EDGE_UPSERTED, NODE_REMOVED, NODE_UPSERTED, EdgeUpserted, MemoryEvent
from tests.code.support import POLYMORPHIC, REPO, WhitespaceCounter, change, fixture_changes, ref

Snapshot = tuple[frozenset[tuple[str, str, str, str]], frozenset[tuple[str, str, str]]]


def snapshot(graph: CodeGraph) -> Snapshot:
    nodes = frozenset(
        (r.node_id, r.kind, r.text, json.dumps(r.properties, sort_keys=True)) for r in graph.nodes_by_id.values()
    )
    edges = frozenset(
        (edge_type, src, dst)
        for src, table in graph.out_edges.items()
        for edge_type, dst, _w in table.values()
        if edge_type != "CAUSAL"
    )
    return nodes, edges


def built(changes: list[tuple[str, str | None]]) -> tuple[CodeGraphBuilder, CodeGraph, list[list[MemoryEvent]]]:
    builder = CodeGraphBuilder(WhitespaceCounter())
    graph = CodeGraph()
    graph.apply_all(builder.apply_batch(fixture_changes()))
    steps = []
    for offset, (path, text) in enumerate(changes, start=100):
        events = builder.apply(change(path, text or "", deleted=text is None), ref(offset))
        graph.apply_all(events)
        steps.append(events)
    return builder, graph, steps


def fresh(files: dict[str, str]) -> CodeGraph:
    builder = CodeGraphBuilder(WhitespaceCounter())
    graph = CodeGraph()
    graph.apply_all(builder.apply_batch([(change(p, t), ref(i)) for i, (p, t) in enumerate(sorted(files.items()))]))
    return graph


def fixture_files() -> dict[str, str]:
    return {p.relative_to(POLYMORPHIC).as_posix(): p.read_text("utf-8") for p in POLYMORPHIC.rglob("*.py")}


def label(event: MemoryEvent) -> str:
    """``NodeUpserted:code_method``, ``EdgeRemoved:CALLS``, ..."""
    kind, record = event["change"]
    fields: Mapping[str, object] = record
    return f"{kind.removeprefix('engram.')}:{fields.get('kind') or fields.get('edge_type')}"


def node_ids(events: list[MemoryEvent], kind: str) -> set[str]:
    out = set()
    for event in events:
        change_kind, record = event["change"]
        fields: Mapping[str, object] = record
        if change_kind == kind:
            out.add(str(fields["node_id"]))
    return out


def qual_of(graph: CodeGraph, node_id: str) -> str:
    record = graph.node(node_id)
    return record.properties.get("qualname", "") if record else ""


FRAUD = (POLYMORPHIC / "fraud" / "service.py").read_text("utf-8")
CRYPTO = (POLYMORPHIC / "payments" / "crypto.py").read_text("utf-8")
AUTH_USING_DEFAULT = (
    "from ..fraud.service import DEFAULT\n"
    + (POLYMORPHIC / "auth" / "service.py").read_text("utf-8")
    + "\n\ndef check() -> bool:\n    return DEFAULT.screen('a', 1)\n"
)


def test_unchanged_content_emits_nothing() -> None:
    _builder, _graph, steps = built([("fraud/service.py", FRAUD), ("fraud/__init__.py", "")])
    assert steps == [[], []]


def test_editing_a_method_body_upserts_only_that_method_and_its_chunk() -> None:
    edited = FRAUD.replace("< self.threshold", "<= self.threshold")
    _builder, graph, [events] = built([("fraud/service.py", edited)])
    assert {label(e) for e in events} == {"NodeUpserted:code_method", "NodeUpserted:code_chunk"}
    methods = [qual_of(graph, i) for i in node_ids(events, NODE_UPSERTED) if graph.nodes_by_id[i].kind == "code_method"]
    assert methods == ["fraud.service.FraudCheckService.screen"]


def test_a_new_call_adds_one_edge_and_its_unresolved_target() -> None:
    edited = FRAUD.replace("return self.risk_score(", "self.audit_log(account)\n        return self.risk_score(")
    _builder, graph, [events] = built([("fraud/service.py", edited)])
    added = [e for e in events if label(e) in ("EdgeUpserted:CALLS", "NodeUpserted:code_unresolved")]
    assert len(added) == 2
    target = graph.nodes_by_id[next(iter(node_ids(events, NODE_UPSERTED) & set(graph.nodes_by_id)))]
    assert any(
        r.kind == "code_unresolved" and r.text == "fraud.service.FraudCheckService.audit_log" for r in graph.nodes()
    )
    assert target is not None
    assert not [e for e in events if e["change"][0] in (NODE_REMOVED, EDGE_REMOVED)]


def test_unchanged_entities_keep_their_ids_across_edits() -> None:
    builder, graph, _steps = built([])
    before = {qual_of(graph, i): i for i in graph.nodes_by_id if graph.nodes_by_id[i].kind == "code_method"}
    edited = "# a comment that shifts nothing but the first line\n" + CRYPTO
    graph.apply_all(builder.apply(change("payments/crypto.py", edited), ref(50)))
    after = {qual_of(graph, i): i for i in graph.nodes_by_id if graph.nodes_by_id[i].kind == "code_method"}
    assert before == after


def test_deleting_a_file_removes_its_nodes_and_callers_fall_back_to_unresolved() -> None:
    _builder, graph, [events] = built([("fraud/service.py", None)])
    removed = node_ids(events, NODE_REMOVED)
    assert removed and not any(qual_of(graph, i) for i in removed)  # all gone from the graph
    calls = {
        (graph.nodes_by_id[d].kind, graph.nodes_by_id[d].text)
        for s, table in graph.out_edges.items()
        if qual_of(graph, s) == "payments.credit_card.CreditCardProcessor.authorize"
        for t, d, _w in table.values()
        if t == "CALLS"
    }
    assert ("code_unresolved", "payments.credit_card.CreditCardProcessor.fraud.screen") in calls
    order = [e["change"][0] for e in events]
    assert order == sorted(order, key=[EDGE_REMOVED, NODE_REMOVED, NODE_UPSERTED, EDGE_UPSERTED].index)


def test_incremental_graph_equals_a_fresh_build_after_many_edits() -> None:
    files = fixture_files()
    edits: list[tuple[str, str | None]] = [
        ("fraud/service.py", None),  # delete: callers become unresolved
        ("payments/crypto.py", CRYPTO.replace("confirm_transfer", "confirm")),  # now calls a missing method
        ("chain/validator.py", files["chain/validator.py"].replace("def confirm_transfer", "def confirm")),
        ("fraud/service.py", FRAUD.replace("def screen", "def screen_payment")),  # back, renamed
        ("payments/base.py", files["payments/base.py"].replace("def refund", "def void")),
        ("payments/crypto.py", CRYPTO.replace("return super().authorize(payment)", "return self.audit(payment)")),
        (
            "payments/base.py",
            files["payments/base.py"] + "\n    def audit(self, payment: Payment) -> bool:\n        return True\n",
        ),
        ("chain/__init__.py", "from .validator import BlockchainValidator\n"),  # a new re-export
        ("auth/service.py", AUTH_USING_DEFAULT),  # calls a module-level instance that does not exist yet
        ("fraud/service.py", FRAUD + "\n\nDEFAULT = FraudCheckService(0.5)\n"),
    ]
    _builder, graph, _steps = built(edits)
    check = next(r for r in graph.nodes() if r.properties.get("qualname") == "auth.service.check")
    targets = {qual_of(graph, d) for t, d, _w in graph.out_edges[check.node_id].values() if t == "CALLS"}
    assert targets == {"fraud.service.FraudCheckService.screen"}
    audit = [r for r in graph.nodes() if r.properties.get("qualname") == "payments.base.PaymentProcessor.audit"]
    assert len(audit) == 1 and any(t == "CALLS" for t, _s, _w in graph.in_edges[audit[0].node_id].values())
    final: dict[str, str | None] = dict(files)
    for path, text in edits:
        final[path] = text
    assert snapshot(graph) == snapshot(fresh({p: t for p, t in final.items() if t is not None}))


def test_state_round_trips_through_json() -> None:
    a = CodeGraphBuilder(WhitespaceCounter())
    a.apply_batch(fixture_changes())
    restored = RepoCodeState.from_dict(json.loads(json.dumps(a.state(REPO).to_dict())))
    b = CodeGraphBuilder(WhitespaceCounter())
    b.load(REPO, restored)
    edit = change("fraud/service.py", FRAUD.replace("def screen", "def screen_payment"))
    assert a.apply(edit, ref(7)) == b.apply(edit, ref(7))
    assert a.state(REPO).to_dict() == b.state(REPO).to_dict()


def test_replay_gives_identical_events() -> None:
    first = CodeGraphBuilder(WhitespaceCounter()).apply_batch(fixture_changes())
    second = CodeGraphBuilder(WhitespaceCounter()).apply_batch(fixture_changes())
    assert first == second
    assert all(e["key"] == REPO and e["sources"][0]["topic"] == "engram.code" for e in first)


def test_a_change_caused_by_turns_gets_causal_edges_from_them() -> None:
    builder = CodeGraphBuilder(WhitespaceCounter())
    graph = CodeGraph()
    graph.apply_all(builder.apply_batch(fixture_changes()))
    edited = change(
        "fraud/service.py", FRAUD.replace("< self.threshold", "<= self.threshold"), parents=["t9"], user_id="u1"
    )
    events = builder.apply(edited, ref(42))
    graph.apply_all(events)
    turn = event_node_id("u1", "t9")
    effects = {qual_of(graph, dst) for t, dst, _w in graph.out_edges[turn].values() if t == "CAUSAL"}
    assert effects == {"fraud.service", "fraud.service.FraudCheckService.screen"}
    # The user's partition hears of it too (keyed by the user): its dream step must not let the
    # turn go dormant (eq. 15: a node with an outgoing causal edge stays active).
    mine = [e for e in events if e["key"] == "u1"]
    assert [
        (c["edge_type"], c["src"], qual_of(graph, c["dst"])) for e in mine if (c := change_as(e, EdgeUpserted))
    ] == [("CAUSAL", turn, "fraud.service")]
    dream = DreamGraph("u1")
    dream.apply(mine)
    assert dream.causal_out[turn]


def test_per_file_records_rebuild_the_same_state() -> None:
    """A Faust table keyed by (repo, path) holds what take_changes hands out."""
    builder = CodeGraphBuilder(WhitespaceCounter())
    builder.apply_batch(fixture_changes())
    table: dict[str, JSONDict] = {}
    state = builder.state(REPO)

    def flush() -> None:
        for path, record in state.take_changes().items():
            if record is None:
                table.pop(path, None)
            else:
                table[path] = json.loads(json.dumps(record))

    flush()
    builder.apply(change("fraud/service.py", "", deleted=True), ref(60))
    flush()
    assert "fraud/service.py" not in table and "payments/credit_card.py" in table  # a caller was re-resolved
    restored = RepoCodeState.from_records(REPO, table)
    assert restored.to_dict() == state.to_dict()


def test_an_unsupported_file_raises_before_touching_the_state() -> None:
    builder = CodeGraphBuilder(WhitespaceCounter())
    builder.apply_batch(fixture_changes())
    before = builder.state(REPO).to_dict()
    batch = [
        (change("fraud/service.py", FRAUD.replace("def screen", "def screen_payment")), ref(70)),
        (change("README.md", "# hello"), ref(71)),
    ]
    with pytest.raises(UnsupportedLanguageError, match="README.md"):
        builder.apply_batch(batch)
    assert builder.state(REPO).to_dict() == before
