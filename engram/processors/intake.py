"""Intake: decode and validate input messages, or explain why not.

Bad input never stops the pipeline and is never dropped silently: every rejected message becomes a
`DeadLetter` with the raw bytes, the source coordinates and a human-readable reason. The reason
*class* (a small fixed set) is what metrics label by; the full reason is in the record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar, cast

from engram.processors.code.languages import is_supported
from engram.processors.graph.types import QUERY_TYPES
from engram.processors.trust.instances import naming_problems, placement_problems
from engram.processors.trust.relations import Relationship
from engram.schemas.codec import CodecError, IncompatibleSchemaError, MalformedMessageError, UnknownSchemaError
from engram.schemas.records import LAYERS, PINNED_KINDS, CodeChange, ContextRequest, ConversationTurn, DeadLetter

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

REASON_CLASSES: Final = (
    "malformed", "unknown_schema", "incompatible_schema", "invalid", "empty", "processing", "unauthorized",
)  # fmt: skip
MAX_CONTENT_CHARS: Final = 1_000_000  # a code change's content
# The one maximum size of a turn's content, in UTF-8 bytes, checked here and by the client SDK
# before it sends (engram_client.client.MAX_TURN_BYTES, kept equal by a test). A turn is one message:
# 256 KiB is ~64k tokens of English, fits a Kafka client's default 1 MB record with its envelope,
# and bounds one turn's ingest work (its embedding took ~2 s here at 256 KiB, ~8 s at 950 KB).
MAX_TURN_BYTES: Final = 256 * 1024
MAX_TOKEN_BUDGET: Final = 1_000_000
MAX_FUTURE_SKEW_MS: Final = 24 * 3_600_000  # how far ahead of its arrival an input may be stamped
TIMED_INPUTS: Final = frozenset({"ConversationTurn", "CodeChange"})


class Decoder(Protocol[T_co]):
    def decode(self, data: bytes) -> T_co: ...


@dataclass(frozen=True, slots=True)
class Accepted(Generic[T]):
    record: T


@dataclass(frozen=True, slots=True)
class Rejected:
    """Why a record was refused. ``decoded``: the record itself when it decoded and broke a
    contract rule (None otherwise), so that a request's requester can be told (an error reply)."""

    reason_class: str
    reason: str
    error_type: str
    decoded: object = None


def _problems_turn(t: Mapping[str, Any]) -> list[str]:
    problems = []
    for name in ("turn_id", "user_id", "session_id"):
        if not t[name]:
            problems.append(f"{name} is empty")
    if t["turn_index"] < 0:
        problems.append(f"turn_index {t['turn_index']} is negative")
    if t["event_time_ms"] <= 0:
        problems.append(f"event_time_ms {t['event_time_ms']} is not a positive epoch-ms time")
    problems.extend(_content_problems(t))
    if t["turn_id"] in t["causal_parent_ids"]:
        problems.append("a turn cannot be its own causal parent")
    pinned = t["metadata"].get("pinned")
    if pinned is not None and pinned not in PINNED_KINDS:
        problems.append(f"metadata pinned {pinned!r} is not one of {', '.join(PINNED_KINDS)}")
    return problems + placement_problems(t["layer"], t.get("instance"), t["user_id"])


def _content_problems(t: Mapping[str, Any]) -> list[str]:
    """A turn says something: its content is neither blank (unless the turn calls tools, as an
    assistant turn may with nothing else to say) nor larger than `MAX_TURN_BYTES`."""
    content: str = t["content"]
    if not content.strip() and not t["tool_calls"]:
        return ["content is empty or only whitespace: a turn must say something"]
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_TURN_BYTES:
        return [f"content is {size} bytes of UTF-8 (max {MAX_TURN_BYTES}, the largest turn Engram takes)"]
    return []


def _problems_code(c: Mapping[str, Any]) -> list[str]:
    problems = [f"{name} is empty" for name in ("change_id", "repo", "path") if not c[name]]
    if c["event_time_ms"] <= 0:
        problems.append(f"event_time_ms {c['event_time_ms']} is not a positive epoch-ms time")
    if len(c["content"]) > MAX_CONTENT_CHARS:
        problems.append(f"content has {len(c['content'])} chars (max {MAX_CONTENT_CHARS})")
    if c["path"] and not is_supported(c["path"], c["language"]):
        problems.append(f"no code grammar for {c['path']!r} (language {c['language']!r})")
    return problems + placement_problems(c["layer"], c.get("instance"), c["user_id"])


def _problems_request(r: Mapping[str, Any]) -> list[str]:
    problems = [f"{name} is empty" for name in ("request_id", "user_id", "query") if not r[name]]
    if not 0 < r["token_budget"] <= MAX_TOKEN_BUDGET:
        problems.append(f"token_budget {r['token_budget']} is outside 1..{MAX_TOKEN_BUDGET}")
    if not r["authorized_layers"]:
        problems.append("authorized_layers is empty: nothing could be returned")
    unknown = [layer for layer in r["authorized_layers"] if layer not in LAYERS]
    if unknown:
        problems.append(f"unknown layers {unknown}")
    return problems + naming_problems(r.get("instances"))


def _problems_graph_request(r: Mapping[str, Any]) -> list[str]:
    problems = [f"{name} is empty" for name in ("query_id", "user_id") if not r[name]]
    if r["query_type"] not in QUERY_TYPES:
        problems.append(f"unknown query type {r['query_type']!r}; expected one of {', '.join(QUERY_TYPES)}")
    if not r["authorized_layers"]:
        problems.append("authorized_layers is empty: nothing could be returned")
    try:
        params = json.loads(r["params_json"])
    except ValueError as exc:
        problems.append(f"params_json is not JSON: {exc}")
    else:
        if not isinstance(params, dict):
            problems.append("params_json is not a JSON object")
    if r["apply"] and r["query_type"] != "consolidate":
        problems.append(f"only a consolidation can be applied, not {r['query_type']!r}")
    return problems + naming_problems(r.get("instances"))


def _problems_relationship(r: Mapping[str, Any]) -> list[str]:
    try:
        Relationship(r["subject"], r["relation"], r["object"]).check()
    except ValueError as exc:  # RelationError, InstanceError
        return [str(exc)]
    return []


def _problems_erasure(r: Mapping[str, Any]) -> list[str]:
    problems = [] if r["user_id"] else ["user_id is empty"]
    if r["event_time_ms"] <= 0:
        problems.append(f"event_time_ms {r['event_time_ms']} is not a positive epoch-ms time")
    return problems


VALIDATORS: Final[Mapping[str, Callable[[Mapping[str, Any]], list[str]]]] = {
    "ConversationTurn": _problems_turn,
    "CodeChange": _problems_code,
    "ContextRequest": _problems_request,
    "GraphRequest": _problems_graph_request,
    "RelationshipChanged": _problems_relationship,
    "ErasureRequested": _problems_erasure,
}


def _nul_field(value: object, path: str = "") -> str | None:
    """The first string field holding a NUL character, by path: binary data in a text field. No
    store takes it (FalkorDB's client sends parameters inside the query text, which a NUL ends), so
    it is refused here, once, instead of failing a sink batch on every retry. The path is spelled
    only for the field found: every admitted record is walked, and almost none holds a NUL."""
    if not _holds_nul(value):
        return None
    if isinstance(value, str):
        return path or "value"
    if isinstance(value, dict):
        return next(_nul_field(v, f"{path}.{k}".lstrip(".")) for k, v in value.items() if _holds_nul(v))
    if isinstance(value, list):
        return next(_nul_field(v, f"{path}[{i}]") for i, v in enumerate(value) if _holds_nul(v))
    return None


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(v) for v in value.values())
    if isinstance(value, list):
        if value and isinstance(value[0], int | float):  # an embedding: numbers only
            return False
        return any(_holds_nul(v) for v in value)
    return False


def _future_time(record: Mapping[str, Any], received_ms: int) -> str | None:
    """An input stamped later than the broker received it, beyond the allowed clock skew. Event time
    drives windows, dreams and the facts' TTL pruning: one turn from the year 3000 would move its
    user's clock there and prune every short-term fact."""
    stamped = record.get("event_time_ms")
    if received_ms > 0 and isinstance(stamped, int) and stamped > received_ms + MAX_FUTURE_SKEW_MS:
        return f"event_time_ms {stamped} is {(stamped - received_ms) / 3_600_000:.0f} h after the broker received it"
    return None


def admit(decoder: Decoder[T], schema_name: str, data: bytes | None, received_ms: int = 0) -> Accepted[T] | Rejected:
    """Decode ``data`` and validate it against the record's semantic rules; an input (a turn or a
    code change) may not be stamped more than `MAX_FUTURE_SKEW_MS` after ``received_ms``, the broker
    timestamp (0: unknown, not checked)."""
    if not data:
        return Rejected("empty", "message has no value", "EmptyMessage")
    try:
        record = decoder.decode(data)
    except UnknownSchemaError as exc:
        return Rejected("unknown_schema", str(exc), type(exc).__name__)
    except IncompatibleSchemaError as exc:
        return Rejected("incompatible_schema", str(exc), type(exc).__name__)
    except (MalformedMessageError, CodecError) as exc:
        return Rejected("malformed", str(exc), type(exc).__name__)
    validate = VALIDATORS.get(schema_name)
    problems = validate(cast(Mapping[str, Any], record)) if validate is not None else []
    late = _future_time(cast(Mapping[str, Any], record), received_ms) if schema_name in TIMED_INPUTS else None
    if late is not None:
        problems.append(late)
    nul = _nul_field(record)
    if nul is not None:
        problems.append(f"{nul} holds a NUL character (binary data in a text field)")
    if problems:
        return Rejected("invalid", f"invalid {schema_name}: " + "; ".join(problems), "ValidationError", record)
    return Accepted(record)


def dead_letter(
    rejected: Rejected, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None, stage: str
) -> DeadLetter:
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "key": key,
        "value": value,
        "reason": rejected.reason,
        "error_type": rejected.error_type,
        "stage": stage,
        "reason_class": rejected.reason_class,
    }


__all__ = ["Accepted", "Rejected", "admit", "dead_letter", "CodeChange", "ContextRequest", "ConversationTurn"]
