"""Faust topic declarations. Values travel as raw bytes: the Avro codec decodes them inside the
agents, so an undecodable message becomes a dead letter instead of crashing Faust's deserializer."""

from __future__ import annotations

from dataclasses import dataclass

from faust.types import AppT, TopicT

from engram.streams.config import EngramConfig

Topic = TopicT


@dataclass(frozen=True)
class EngramTopics:
    turns: Topic
    code: Topic
    requests: Topic
    memory: Topic
    compiled: Topic
    deadletter: Topic
    archived: Topic  # one Faust topic over the names only the archive agent archives
    relationships: Topic
    erasures: Topic

    @property
    def inputs(self) -> tuple[Topic, Topic, Topic]:
        return (self.turns, self.code, self.requests)


def declare_topics(app: AppT, config: EngramConfig) -> EngramTopics:
    names = config.topics

    def topic(*topic_names: str) -> Topic:
        return app.topic(*topic_names, key_serializer="raw", value_serializer="raw", partitions=config.partitions)

    return EngramTopics(
        turns=topic(names.turns),
        code=topic(names.code),
        requests=topic(names.requests),
        memory=topic(names.memory),
        compiled=topic(names.compiled),
        deadletter=topic(names.deadletter),
        archived=topic(*names.archived_alone),
        relationships=topic(names.relationships),
        erasures=topic(names.erasures),
    )
