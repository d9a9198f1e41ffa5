"""Policies: a pinned turn becomes a node of its kind, and every compile that may see it pins it."""

from __future__ import annotations

import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.intake import Rejected, admit
from engram.processors.policies import PolicyError, policy_turn
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn
from engram.streams.steps import derive_turns
from tests.compiler.haystack import distractors
from tests.compiler.memory import T0, VectorView, counter, embedder, request

RULE = "Refunds above 500 EUR need a second approver."


def view_with(*turns: ConversationTurn) -> VectorView:
    derived, _ = derive_turns([Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(turns)], "m")
    view = VectorView(embedder=embedder(), token_counter=counter())
    view.apply(derived)
    return view


def chatter(user: str) -> list[ConversationTurn]:
    return [
        {**policy_turn(text, "user:" + user, "policy", user, T0 + i), "role": "user", "metadata": {},
         "session_id": f"{user}-s", "turn_id": f"{user}-{i}"}
        for i, text in enumerate(distractors(15))
    ]  # fmt: skip


def test_a_team_policy_is_pinned_for_its_members_only() -> None:
    rule = policy_turn(RULE, "team:payments", "policy", "carol", T0)
    assert (rule["layer"], rule["instance"], rule["metadata"]) == ("TEAM", "team:payments", {"pinned": "policy"})
    view = view_with(rule, *chatter("ada"))
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, clock=lambda: 0.0)
    asked = request("What did I do last weekend?", 200, user_id="ada", layers=["TEAM", "USER"])
    member = compiler.compile({**asked, "instances": ["system", "team:payments", "user:ada"]})
    assert member["items"][0]["text"] == RULE and member["items"][0]["pinned"]
    stranger = compiler.compile({**asked, "instances": ["system", "team:fraud", "user:ada"]})
    assert all(item["text"] != RULE for item in stranger["items"])


def test_a_policy_is_checked_before_it_is_sent() -> None:
    assert policy_turn("Be kind.", "user:ada", "procedural", "bob", T0)["user_id"] == "ada"
    for text, instance, kind in (("x", "team:a", "rumour"), (" ", "team:a", "policy"), ("x", "service:bot", "policy"),
                                 ("x", "team:A;DROP", "policy")):  # fmt: skip
        with pytest.raises(PolicyError):
            policy_turn(text, instance, kind, "carol", T0)
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    bad: ConversationTurn = {**policy_turn(RULE, "team:payments", "policy", "carol", T0), "metadata": {"pinned": "x"}}
    verdict = admit(codec, "ConversationTurn", codec.encode(bad), T0)
    assert isinstance(verdict, Rejected) and "metadata pinned 'x'" in verdict.reason
