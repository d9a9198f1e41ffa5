"""Malformed and borderline inputs for `engram bench fuzz`, one generator per kind, deterministic in
the seed. Each case says which input topic it goes to and what it is; whether it must be refused
is for the worker to say (a case can be valid, e.g. a causal parent that was never seen)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from engram.processors.intake import MAX_CONTENT_CHARS
from engram.schemas.codec import AvroCodec
from engram.streams.config import TopicNames

T0: Final = 1_767_225_600_000


@dataclass(frozen=True, slots=True)
class Case:
    kind: str
    topic: str
    key: bytes
    value: bytes


def turn(rng: np.random.Generator, **changes: Any) -> dict[str, Any]:
    user = f"fuzz-{int(rng.integers(8))}"
    index = int(rng.integers(10_000))
    base: dict[str, Any] = {
        "turn_id": f"{user}-{index}", "user_id": user, "agent_id": None, "flow_id": None, "session_id": f"{user}-s",
        "turn_index": index, "role": "user", "content": f"fuzz turn {index}", "event_time_ms": T0 + index,
        "layer": "USER", "causal_parent_ids": [], "tool_calls": [], "metadata": {},
    }  # fmt: skip
    return {**base, **changes}


def code(rng: np.random.Generator, **changes: Any) -> dict[str, Any]:
    n = int(rng.integers(10_000))
    base: dict[str, Any] = {
        "change_id": f"fuzz-{n}", "repo": "fuzz", "path": f"src/m{n}.py", "language": "python", "commit": f"c{n}",
        "content": "def f():\n    return 1\n", "deleted": False, "event_time_ms": T0 + n, "layer": "ORGANIZATION",
        "causal_parent_ids": [], "user_id": None, "session_id": None,
    }  # fmt: skip
    return {**base, **changes}


def request(rng: np.random.Generator, **changes: Any) -> dict[str, Any]:
    n = int(rng.integers(10_000))
    base: dict[str, Any] = {
        "request_id": f"fuzz-r{n}", "user_id": f"fuzz-{n % 8}", "session_id": "fuzz", "query": "what happened?",
        "token_budget": 500, "authorized_layers": ["USER"], "intent_hint": None, "agent_id": None,
        "event_time_ms": T0 + n,
    }  # fmt: skip
    return {**base, **changes}


class Fuzzer:
    def __init__(self, names: TopicNames, seed: int) -> None:
        self.names = names
        self.rng = np.random.default_rng(seed)
        self.turns: AvroCodec[dict[str, Any]] = AvroCodec("ConversationTurn")
        self.code: AvroCodec[dict[str, Any]] = AvroCodec("CodeChange")
        self.requests: AvroCodec[dict[str, Any]] = AvroCodec("ContextRequest")
        self.kinds: dict[str, Callable[[], Case]] = {
            "truncated_avro": self.truncated, "corrupted_avro": self.corrupted, "unknown_fingerprint": self.unknown,
            "wrong_schema": self.wrong_schema, "empty": self.empty, "content_over_limit": self.huge_turn,
            "invalid_utf8": self.invalid_utf8, "missing_id": self.missing_id, "duplicate_id": self.duplicate,
            "time_far_past": self.far_past, "time_far_future": self.far_future, "unknown_parent": self.orphan,
            "binary_code": self.binary_code, "huge_code": self.huge_code, "unsupported_language": self.language,
            "absurd_budget": self.absurd_budget, "no_layers": self.no_layers, "not_json_graph_params": self.graph,
            "injected_instance": self.injected_instance, "instance_of_another_layer": self.misplaced,
            "unknown_pin_kind": self.unknown_pin, "reply_topic_outside": self.reply_outside,
            "erasure_without_user": self.erasure_without_user, "relationship_of_wrong_kinds": self.bad_relationship,
        }  # fmt: skip

    def cases(self, n: int) -> list[Case]:
        kinds = sorted(self.kinds)
        return [self.kinds[kinds[i % len(kinds)]]() for i in range(n)]

    def _turn(self, kind: str, **changes: Any) -> Case:
        record = turn(self.rng, **changes)
        return Case(kind, self.names.turns, record["user_id"].encode(), self.turns.encode(record))

    def truncated(self) -> Case:
        value = self.turns.encode(turn(self.rng))
        return Case("truncated_avro", self.names.turns, b"fuzz", value[: int(self.rng.integers(1, len(value) - 1))])

    def corrupted(self) -> Case:
        value = bytearray(self.turns.encode(turn(self.rng)))
        for _ in range(4):
            value[int(self.rng.integers(10, len(value)))] = int(self.rng.integers(256))
        return Case("corrupted_avro", self.names.turns, b"fuzz", bytes(value))

    def unknown(self) -> Case:
        value = self.turns.encode(turn(self.rng))
        return Case("unknown_fingerprint", self.names.code, b"fuzz", value[:2] + self.rng.bytes(8) + value[10:])

    def wrong_schema(self) -> Case:
        return Case("wrong_schema", self.names.requests, b"fuzz", self.code.encode(code(self.rng)))

    def empty(self) -> Case:
        return Case("empty", self.names.turns, b"fuzz", b"")

    def huge_turn(self) -> Case:
        return self._turn("content_over_limit", content="x" * (MAX_CONTENT_CHARS + 1))

    def invalid_utf8(self) -> Case:
        marker = "\u00e9" * 8  # 16 bytes of UTF-8 to overwrite with bytes that are not UTF-8
        value = self.turns.encode(turn(self.rng, content=marker))
        at = value.index(marker.encode())
        return Case("invalid_utf8", self.names.turns, b"fuzz", value[:at] + b"\xff\xfe" * 8 + value[at + 16 :])

    def missing_id(self) -> Case:
        return self._turn("missing_id", turn_id="")

    def duplicate(self) -> Case:
        return self._turn("duplicate_id", turn_id="fuzz-duplicate", user_id="fuzz-dup", turn_index=0)

    def far_past(self) -> Case:
        return self._turn("time_far_past", event_time_ms=-5)

    def far_future(self) -> Case:
        return self._turn("time_far_future", event_time_ms=32_503_680_000_000)  # year 3000

    def orphan(self) -> Case:
        return self._turn("unknown_parent", causal_parent_ids=["never-seen"])

    def _code(self, kind: str, **changes: Any) -> Case:
        return Case(kind, self.names.code, b"fuzz", self.code.encode(code(self.rng, **changes)))

    def binary_code(self) -> Case:
        return self._code("binary_code", content="\x00\x01\x02" * 100 + "def f(): pass")

    def huge_code(self) -> Case:
        return self._code("huge_code", content="x = 1\n" * (MAX_CONTENT_CHARS // 6 + 10))

    def language(self) -> Case:
        return self._code("unsupported_language", path="main.cob", language="cobol")

    def _request(self, kind: str, **changes: Any) -> Case:
        record = request(self.rng, **changes)
        return Case(kind, self.names.requests, record["user_id"].encode(), self.requests.encode(record))

    def absurd_budget(self) -> Case:
        return self._request("absurd_budget", token_budget=[0, -1, 2**31 - 1][int(self.rng.integers(3))])

    def no_layers(self) -> Case:
        return self._request("no_layers", authorized_layers=[])

    def graph(self) -> Case:
        codec: AvroCodec[dict[str, Any]] = AvroCodec("GraphRequest")
        record = {"query_id": "fuzz-g", "user_id": "fuzz-0", "authorized_layers": ["USER"], "query_type": "bm25",
                  "params_json": json.dumps([1, 2]), "apply": False, "agent_id": None, "event_time_ms": T0}  # fmt: skip
        return Case("not_json_graph_params", self.names.graph_requests, b"fuzz-0", codec.encode(record))

    # --- the trust boundary (issue 17): instance names, pins, reply topics, erasures, tuples -----

    def injected_instance(self) -> Case:
        return self._turn("injected_instance", layer="TEAM", instance="team:x}) DETACH DELETE n //")

    def misplaced(self) -> Case:
        return self._turn("instance_of_another_layer", layer="TEAM", instance="org:acme")

    def unknown_pin(self) -> Case:
        return self._turn("unknown_pin_kind", role="system", metadata={"pinned": "rumour"})

    def reply_outside(self) -> Case:
        return self._request("reply_topic_outside", reply_topic=self.names.memory)

    def erasure_without_user(self) -> Case:
        codec: AvroCodec[dict[str, Any]] = AvroCodec("ErasureRequested")
        record = {"user_id": "", "reason": "fuzz", "requested_by": None, "event_time_ms": T0, "token": None}
        return Case("erasure_without_user", self.names.erasures, b"fuzz", codec.encode(record))

    def bad_relationship(self) -> Case:
        codec: AvroCodec[dict[str, Any]] = AvroCodec("RelationshipChanged")
        record = {"subject": "team:a", "relation": "member_of", "object": "user:b", "present": True, "actor": None,
                  "reason": "fuzz", "event_time_ms": T0}  # fmt: skip
        return Case("relationship_of_wrong_kinds", self.names.relationships, b"fuzz", codec.encode(record))
