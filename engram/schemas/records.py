"""Typed shapes of the Avro records, as the codec reads and writes them.

These are TypedDicts so that a decoded record *is* the domain value: no copy on the hot path.
Field names and meanings are those of the `.avsc` files in `schemas/avro/`; times are epoch
milliseconds (UTC), token counts are cl100k tokens.

`MemoryEvent.change` is an Avro union of records. It is carried as a `(record_name, record)`
tuple, which is what fastavro writes and (with `return_record_name=True`) reads.
"""

from __future__ import annotations

from typing import Final, Literal, NotRequired, TypeAlias, TypedDict

Layer: TypeAlias = Literal["SYSTEM", "ORGANIZATION", "TEAM", "USER"]
LAYERS: Final[tuple[Layer, ...]] = ("SYSTEM", "ORGANIZATION", "TEAM", "USER")
Role: TypeAlias = Literal["user", "assistant", "tool", "system"]
# Node kinds the compiler pins for every request that may see them (seed 001: procedural memory and
# policies first). A turn becomes one when its metadata says ``pinned: <kind>`` (`engram policy add`).
PINNED_KINDS: Final[tuple[str, ...]] = ("procedural", "policy")
ROLES: Final[tuple[Role, ...]] = ("user", "assistant", "tool", "system")


class EventRef(TypedDict):
    topic: str
    partition: int
    offset: int


class ToolCall(TypedDict):
    call_id: str
    name: str
    arguments_json: str


class ConversationTurn(TypedDict):
    turn_id: str
    user_id: str
    agent_id: str | None
    flow_id: str | None
    session_id: str
    turn_index: int
    role: Role
    content: str
    event_time_ms: int
    layer: Layer
    causal_parent_ids: list[str]
    tool_calls: list[ToolCall]
    metadata: dict[str, str]
    instance: NotRequired[str | None]  # absent from older producers; decoded as None (see node_instance)
    token: NotRequired[str | None]  # the producer's bearer token; never archived


class CodeChange(TypedDict):
    change_id: str
    repo: str
    path: str
    language: str
    commit: str
    content: str
    deleted: bool
    event_time_ms: int
    layer: Layer
    causal_parent_ids: list[str]
    user_id: str | None
    session_id: str | None
    instance: NotRequired[str | None]
    token: NotRequired[str | None]


class ContextRequest(TypedDict):
    request_id: str
    user_id: str
    session_id: str
    query: str
    token_budget: int
    authorized_layers: list[Layer]
    intent_hint: str | None
    agent_id: str | None
    event_time_ms: int
    token: NotRequired[str | None]  # absent when written by an older producer; decoded as None
    instances: NotRequired[list[str] | None]
    reply_topic: NotRequired[str | None]


class GraphRequest(TypedDict):
    query_id: str
    user_id: str
    authorized_layers: list[Layer]
    query_type: str
    params_json: str
    apply: bool
    agent_id: str | None
    event_time_ms: int
    token: NotRequired[str | None]
    instances: NotRequired[list[str] | None]
    reply_topic: NotRequired[str | None]


class ErasureRequested(TypedDict):
    user_id: str
    reason: str
    requested_by: str | None
    event_time_ms: int
    token: NotRequired[str | None]


class RelationshipChanged(TypedDict):
    subject: str
    relation: str
    object: str
    present: bool
    actor: str | None
    reason: str
    event_time_ms: int


class GraphAnswer(TypedDict):
    query_id: str
    user_id: str
    query_type: str
    ok: bool
    error: str | None
    result_json: str
    nodes: int
    events: int
    elapsed_ms: float
    node_texts: dict[str, str]  # node id -> the start of its text, for the ids the result names


class ContextItem(TypedDict):
    node_id: str
    kind: str
    text: str
    score: float
    relevance: float
    ppr: float
    decay: float
    tokens: int
    pinned: bool
    layer: str
    provenance: list[EventRef]


class CompiledContext(TypedDict):
    request_id: str
    user_id: str
    session_id: str
    query: str
    route: str
    route_reason: str
    intent: str
    cache_hit: bool
    partial: bool
    fallbacks: list[str]
    token_budget: int
    total_tokens: int
    items: list[ContextItem]
    timings_ms: dict[str, float]
    error_code: NotRequired[str | None]  # set on a refusal (processors/trust/refusals.py); absent: None
    error: NotRequired[str | None]


class DeadLetter(TypedDict):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    reason: str
    error_type: str
    stage: str
    reason_class: str  # the class Rejected gave; "" when read from a letter written before it


class LoggedEvent(TypedDict):
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


class SealedEvent(LoggedEvent):
    """A LoggedEvent as stored when sealed: ``key`` and ``value`` are ciphertext, ``seal`` the
    subject key's id and the AES-GCM nonce (processors/trust/sealing.py). Readers yield the opened
    LoggedEvent, never this."""

    seal: bytes


# --- MemoryEvent and its change kinds -------------------------------------------------------


class NodeUpserted(TypedDict):
    node_id: str
    kind: str
    layer: Layer
    user_id: str | None
    agent_id: str | None
    flow_id: str | None
    session_id: str | None
    text: str
    tokens: int
    event_time_ms: int
    embedding: list[float] | None  # what writers before ``vector`` wrote; None from new writers
    properties: dict[str, str]
    instance: NotRequired[str | None]  # None or absent: see processors.rebac.node_instance
    vector: NotRequired[bytes | None]  # the embedding, little-endian float32; see node_vector


class NodeRemoved(TypedDict):
    node_id: str
    kind: str
    reason: str


class EdgeUpserted(TypedDict):
    edge_id: str
    edge_type: str
    src: str
    dst: str
    weight: float
    layer: Layer
    properties: dict[str, str]


class EdgeRemoved(TypedDict):
    edge_id: str
    edge_type: str
    src: str
    dst: str
    reason: str


class FactDecided(TypedDict):
    fact_id: str
    user_id: str
    scope: str
    scope_id: str
    subject: str
    relation: str
    value: str
    category: str
    confidence: float
    decision: str
    rule: str
    reason: str
    horizon: str
    access_count: int
    valid_from_ms: int
    valid_to_ms: int | None
    recorded_at_ms: int
    supersedes: str | None
    source_event_ids: list[str]


class FactAccessed(TypedDict):
    user_id: str
    fact_ids: list[str]
    request_id: str


class NodeDormant(TypedDict):
    node_id: str
    reason: str


class NodeReawakened(TypedDict):
    node_id: str
    reason: str


class RuleCommitted(TypedDict):
    rule_id: str
    text: str
    reason: str
    evidence_node_ids: list[str]


class RuleRejected(TypedDict):
    """A dreaming candidate that failed verification: ``stage`` names the check, ``reason`` why."""

    rule_id: str
    text: str
    stage: str
    reason: str
    evidence_node_ids: list[str]


class SubjectErased(TypedDict):
    """Erase everything of ``user_id`` from every projection (``engram forget``); applied in order."""

    user_id: str
    reason: str
    requested_by: str | None


class NodesAccessed(TypedDict):
    """The nodes a compiled context held when its requester received it (``request_id``); the
    access time is the event's ``event_time_ms`` (the request's event time)."""

    node_ids: list[str]
    request_id: str


ChangeRecord: TypeAlias = (
    NodeUpserted
    | NodeRemoved
    | EdgeUpserted
    | EdgeRemoved
    | FactDecided
    | FactAccessed
    | NodeDormant
    | NodeReawakened
    | RuleCommitted
    | RuleRejected
    | SubjectErased
    | NodesAccessed
)

NODE_UPSERTED: Final = "engram.NodeUpserted"
NODE_REMOVED: Final = "engram.NodeRemoved"
EDGE_UPSERTED: Final = "engram.EdgeUpserted"
EDGE_REMOVED: Final = "engram.EdgeRemoved"
FACT_DECIDED: Final = "engram.FactDecided"
FACT_ACCESSED: Final = "engram.FactAccessed"
NODE_DORMANT: Final = "engram.NodeDormant"
NODE_REAWAKENED: Final = "engram.NodeReawakened"
RULE_COMMITTED: Final = "engram.RuleCommitted"
RULE_REJECTED: Final = "engram.RuleRejected"
SUBJECT_ERASED: Final = "engram.SubjectErased"
NODES_ACCESSED: Final = "engram.NodesAccessed"
CHANGE_KINDS: Final[tuple[str, ...]] = (
    NODE_UPSERTED,
    NODE_REMOVED,
    EDGE_UPSERTED,
    EDGE_REMOVED,
    FACT_DECIDED,
    FACT_ACCESSED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    RULE_COMMITTED,
    RULE_REJECTED,
    SUBJECT_ERASED,
    NODES_ACCESSED,
)


class MemoryEvent(TypedDict):
    schema_version: int
    event_id: str
    key: str
    event_time_ms: int
    sources: list[EventRef]
    change: tuple[str, ChangeRecord]


# Optional keys a producer may leave out; the codec fills the schema defaults.
class PartialTurn(TypedDict):
    turn_id: str
    user_id: str
    session_id: str
    turn_index: int
    role: Role
    content: str
    event_time_ms: int
    agent_id: NotRequired[str | None]
    flow_id: NotRequired[str | None]
    layer: NotRequired[Layer]
    causal_parent_ids: NotRequired[list[str]]
    tool_calls: NotRequired[list[ToolCall]]
    metadata: NotRequired[dict[str, str]]
