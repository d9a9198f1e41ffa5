"""A refused request is answered where its requester listens, when the requester is known: a token
this worker's key signed (expired or not), or any requester of an open worker. Never a forged
token's subject, never a topic the principal may not receive on."""

from __future__ import annotations

import pytest

from engram.processors.trust.authorize import Gate
from engram.processors.trust.refusals import refused_context, refused_graph_answer
from engram.processors.trust.relations import Relationship, Relationships
from engram.processors.trust.tokens import TokenConfig, TokenVerifier, check_principal, mint

BASE = "engram.context.compiled"
SECRET = "engram-test-secret-of-at-least-32-bytes"
HS = TokenConfig(SECRET)
NOW = 1_800_000_000
FORGED = mint(TokenConfig("another-secret-that-is-32-bytes-long!"), "user:bob", NOW + 60)


def closed_gate() -> Gate:
    relationships = Relationships()
    relationships.add(Relationship("user:ada", "member_of", "org:acme"))
    return Gate(TokenVerifier(HS), relationships)


def test_a_signed_token_names_its_requester_even_expired() -> None:
    verifier = TokenVerifier(HS)
    assert verifier.signer(mint(HS, "user:ada", NOW - 3600)) == "user:ada"
    assert verifier.signer(mint(HS, "service:bot", NOW + 60)) == "service:bot"
    for unknown in (None, "", "not.a.jwt", FORGED, mint(HS, "team:payments", NOW + 60)):
        assert verifier.signer(unknown) is None


@pytest.mark.parametrize(
    ("token", "requested", "told"),
    [
        (mint(HS, "user:ada", NOW - 3600), None, f"{BASE}.user.ada"),  # expired: its own topic
        (mint(HS, "user:ada", NOW + 60), f"{BASE}.org.acme", f"{BASE}.org.acme"),  # an org it reads
        (mint(HS, "user:ada", NOW + 60), f"{BASE}.user.bob", None),  # another tenant's: never
        (mint(HS, "user:ada", NOW + 60), "engram.memory", None),
        (FORGED, None, None),  # the subject of a token this key did not sign is not believed
        (None, None, None),  # no token on a closed gate: nobody known to tell
    ],
)
def test_a_closed_gate_tells_only_a_known_requester_where_it_may_receive(
    token: str | None, requested: str | None, told: str | None
) -> None:
    assert closed_gate().refusal_topic(BASE, token, requested) == told


def test_an_open_gate_tells_every_requester_under_the_shared_topic() -> None:
    assert Gate().refusal_topic(BASE, None, None) == BASE
    assert Gate().refusal_topic(BASE, None, f"{BASE}.mine") == f"{BASE}.mine"
    assert Gate().refusal_topic(BASE, None, "engram.memory") is None


def test_a_refusal_is_an_empty_answer_with_the_code_and_reason() -> None:
    request = {"request_id": "r1", "user_id": "ada", "session_id": "s", "query": "q", "token_budget": 300}
    context = refused_context(request, "unauthorized", "user:ada may not read user:bob's memory")
    assert context["error_code"] == "unauthorized" and context["error"] == "user:ada may not read user:bob's memory"
    assert context["items"] == [] and context["request_id"] == "r1" and context["token_budget"] == 300
    graph = refused_graph_answer({"query_id": "g1", "user_id": "ada", "query_type": "bm25"}, "invalid", "why")
    assert graph["ok"] is False and graph["error"] == "invalid: why" and graph["query_id"] == "g1"


def test_a_principal_is_a_user_or_a_service() -> None:
    assert check_principal("user:maya") == "user:maya"
    for bad in ("maya", "team:payments", "user:"):
        with pytest.raises(ValueError, match="token subject"):
            check_principal(bad)
