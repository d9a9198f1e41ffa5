"""Faust topic declarations. Values travel as raw bytes: the Avro codec decodes them inside the
agents, so an undecodable message becomes a dead letter instead of crashing Faust's deserializer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streams.config import EngramConfig


@dataclass(frozen=True)
class EngramTopics:
    turns: Any
    code: Any
    requests: Any
    memory: Any
    compiled: Any
    deadletter: Any
    archived: Any  # one Faust topic over every archived name

    @property
    def inputs(self) -> tuple[Any, Any, Any]:
        return (self.turns, self.code, self.requests)


def declare_topics(app: Any, config: EngramConfig) -> EngramTopics:
    names = config.topics

    def topic(*topic_names: str) -> Any:
        return app.topic(*topic_names, key_serializer="raw", value_serializer="raw", partitions=config.partitions)

    return EngramTopics(
        turns=topic(names.turns),
        code=topic(names.code),
        requests=topic(names.requests),
        memory=topic(names.memory),
        compiled=topic(names.compiled),
        deadletter=topic(names.deadletter),
        archived=topic(*names.archived),
    )
