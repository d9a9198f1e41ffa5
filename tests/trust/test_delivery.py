"""Which topic an answer goes to: its requester's own, never another tenant's, never outside."""

from __future__ import annotations

import pytest

from engram.processors.trust.authorize import AuthorizationError, Gate
from engram.processors.trust.delivery import DeliveryError, reply_topic, topic_slug
from engram.processors.trust.relations import Relationship, Relationships
from engram.processors.trust.tokens import TokenConfig, TokenVerifier, mint

BASE = "engram.context.compiled"


def test_slugs_are_topic_names_and_one_to_one() -> None:
    assert topic_slug("org:acme") == "org.acme"
    assert topic_slug("user:ada@acme.io") == "user.ada_acme.io"
    assert topic_slug("service:support-bot") == "service.support-bot"
    with pytest.raises(ValueError, match="not a layer instance"):
        topic_slug("user:Ada; DROP")


def test_a_principal_gets_its_own_topic_and_may_name_its_organizations() -> None:
    reads = frozenset({"system", "org:acme", "team:payments"})
    assert reply_topic(BASE, None, "user:ada", reads) == f"{BASE}.user.ada"
    assert reply_topic(BASE, f"{BASE}.org.acme", "user:ada", reads) == f"{BASE}.org.acme"
    for other in (f"{BASE}.user.bob", f"{BASE}.org.globex", f"{BASE}.team.payments", BASE, "engram.memory"):
        with pytest.raises(DeliveryError, match="may not receive answers"):
            reply_topic(BASE, other, "user:ada", reads)


def test_an_open_worker_answers_on_the_shared_topic_or_one_under_it() -> None:
    assert reply_topic(BASE, None, None) == BASE
    assert reply_topic(BASE, f"{BASE}.demo-1", None) == f"{BASE}.demo-1"
    for bad in ("engram.memory", f"{BASE}.", f"{BASE}.a/b", f"{BASE}x", f"{BASE}.é"):
        with pytest.raises(DeliveryError, match="not a topic under"):
            reply_topic(BASE, bad, None)


def test_the_gate_resolves_the_reply_topic_from_the_token_not_the_claim() -> None:
    config = TokenConfig("delivery-test-secret-of-32-bytes!")
    relationships = Relationships()
    relationships.add(Relationship("user:ada", "member_of", "org:acme"))
    gate = Gate(TokenVerifier(config), relationships)
    access = gate.access("ada", mint(config, "user:ada", 2_000_000_000), ["USER"], 1_900_000_000)
    assert access.reply_topic(BASE, None) == f"{BASE}.user.ada"
    assert access.reply_topic(BASE, f"{BASE}.org.acme") == f"{BASE}.org.acme"
    with pytest.raises(AuthorizationError, match="may not receive answers"):
        access.reply_topic(BASE, f"{BASE}.user.bob")
