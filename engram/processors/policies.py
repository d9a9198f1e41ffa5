"""Policies and procedures as turns: what `engram policy add` and the client's `publish_policy` send.

A policy (or a procedure) is a system turn written into a layer instance (``system``,
``org:acme``, ``team:payments``, ``user:ada``) with ``metadata.pinned`` naming its kind: it goes
through ingest like any turn (the producer must write into that instance), Trace stores it as a
node of that kind, and the compiler pins it for every request that may see it (the view's
``pinned_nodes``). Its id comes from the instance and the text, so adding the same policy twice
writes the same node.
"""

from __future__ import annotations

from engram.processors.trust.instances import InstanceError, parse_instance
from engram.schemas.events import stable_id
from engram.schemas.records import PINNED_KINDS, ConversationTurn


class PolicyError(ValueError):
    """A policy that cannot be written as asked, with the reason."""


def policy_turn(text: str, instance: str, kind: str, author: str, time_ms: int) -> ConversationTurn:
    """The turn that writes ``text`` as a pinned ``kind`` into ``instance``, by user ``author``
    (the instance's user, for a ``user:`` instance)."""
    if kind not in PINNED_KINDS:
        msg = f"kind {kind!r} is not one of {', '.join(PINNED_KINDS)}"
        raise PolicyError(msg)
    if not text.strip():
        msg = "a policy needs a text"
        raise PolicyError(msg)
    try:
        place = parse_instance(instance)
    except InstanceError as exc:
        raise PolicyError(str(exc)) from exc
    layer = place.layer
    if layer is None:
        msg = f"{instance} is a principal, not a place a policy can live"
        raise PolicyError(msg)
    if layer == "USER":
        author = place.id  # a user's own policy lives in that user's memory
    return {
        "turn_id": stable_id("policy", instance, kind, text), "user_id": author, "agent_id": None, "flow_id": None,
        "session_id": f"policies:{instance}", "turn_index": time_ms // 1000 % 2**31, "role": "system",
        "content": text, "event_time_ms": time_ms, "layer": layer, "causal_parent_ids": [], "tool_calls": [],
        "metadata": {"pinned": kind}, "instance": None if layer in ("SYSTEM", "USER") else instance,
    }  # fmt: skip
