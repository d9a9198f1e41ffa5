"""The codec of every Engram topic under one configuration: Confluent wire format through the
schema registry when `schema_registry_url` is set, Avro single-object encoding otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from engram.schemas.codec import CodecConfig, make_codec
from engram.streams.config import EngramConfig


class Codec(Protocol):
    def encode(self, record: Any) -> bytes: ...

    def decode(self, data: bytes) -> Any: ...


@dataclass(frozen=True)
class TopicCodecs:
    turns: Codec
    code: Codec
    requests: Codec
    memory: Codec
    compiled: Codec
    deadletter: Codec
    graph_requests: Codec
    graph_answers: Codec
    relationships: Codec
    erasures: Codec

    @classmethod
    def for_config(cls, config: EngramConfig) -> TopicCodecs:
        codec_config = CodecConfig(registry_url=config.schema_registry_url)
        names = config.topics
        return cls(
            turns=make_codec("ConversationTurn", names.turns, codec_config),
            code=make_codec("CodeChange", names.code, codec_config),
            requests=make_codec("ContextRequest", names.requests, codec_config),
            memory=make_codec("MemoryEvent", names.memory, codec_config),
            compiled=make_codec("CompiledContext", names.compiled, codec_config),
            deadletter=make_codec("DeadLetter", names.deadletter, codec_config),
            graph_requests=make_codec("GraphRequest", names.graph_requests, codec_config),
            graph_answers=make_codec("GraphAnswer", names.graph_answers, codec_config),
            relationships=make_codec("RelationshipChanged", names.relationships, codec_config),
            erasures=make_codec("ErasureRequested", names.erasures, codec_config),
        )
