"""Wait for compiled contexts by request id (for `ask`, demo, benches): on engram.context.compiled,
or, for a request with a token, on its requester's own topic under it (processors/trust/delivery.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, TopicPartition

from engram.processors.trust.delivery import listening_topic
from engram.schemas.codec import AvroCodec
from engram.schemas.records import CompiledContext, ContextRequest, GraphAnswer, GraphRequest
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.agents.requests import low_latency_consumer_settings
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig


def await_compiled(
    bootstrap: str,
    topics: str | Collection[str],
    request_ids: Collection[str],
    send: Callable[[], Any],
    timeout_s: float,
    codec: Any = None,
    settings: Mapping[str, str | int | float | bool] | None = None,
    id_field: str = "request_id",
) -> dict[str, Any]:
    """Start reading at the topics' end, call ``send``, and collect the answers to ``request_ids``
    (matched on the answer's ``id_field``; CompiledContext by default). A topic missing is created
    first (a requester's private topic before its first answer: processors/trust/delivery.py).
    ``settings``: extra librdkafka consumer settings (the stand-in's short fetch wait).

    The stand-in broker may report an end offset slightly before the true end; older answers are
    simply skipped because their request ids do not match.
    """
    wanted = set(request_ids)
    found: dict[str, Any] = {}
    codec = codec or AvroCodec("CompiledContext")
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"engram-replies-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            **(settings or {}),
        }
    )
    names = [topics] if isinstance(topics, str) else sorted(set(topics))
    try:
        ensure_topics(bootstrap, names, 1)
        assigned = [
            TopicPartition(topic, p, OFFSET_END)
            for topic in names
            for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions
        ]
        consumer.assign(assigned)
        consumer.poll(0.5)  # let the assignment settle at the end offsets before anything is sent
        send()
        deadline = time.monotonic() + timeout_s
        while wanted - found.keys() and time.monotonic() < deadline:
            message = consumer.poll(0.1)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                msg = f"reading {message.topic()}: {error}"
                raise RuntimeError(msg)
            answer = codec.decode(message.value() or b"")
            if answer[id_field] in wanted:
                found[answer[id_field]] = answer
    finally:
        consumer.close()
    return found


def request_contexts(
    config: EngramConfig, requests: Sequence[ContextRequest], timeout_s: float
) -> dict[str, CompiledContext]:
    """Publish context requests (keyed by user) and collect the compiled contexts that answer them."""
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)

    def send() -> None:
        for request in requests:
            publisher.publish(config.topics.requests, request["user_id"].encode(), codecs.requests.encode(request))
        publisher.flush()

    ids = [r["request_id"] for r in requests]
    settings = low_latency_consumer_settings(config)
    topics = {listening_topic(config.topics.compiled, r.get("reply_topic"), r.get("token")) for r in requests}
    return await_compiled(config.bootstrap_servers, topics, ids, send, timeout_s, codecs.compiled, settings)


def graph_answers(config: EngramConfig, requests: Sequence[GraphRequest], timeout_s: float) -> dict[str, GraphAnswer]:
    """Publish graph query requests (keyed by user) and collect their answers by query id."""
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)

    def send() -> None:
        for request in requests:
            value = codecs.graph_requests.encode(request)
            publisher.publish(config.topics.graph_requests, request["user_id"].encode(), value)
        publisher.flush()

    ids = [r["query_id"] for r in requests]
    settings = low_latency_consumer_settings(config)
    topics = {listening_topic(config.topics.graph_answers, r.get("reply_topic"), r.get("token")) for r in requests}
    return await_compiled(
        config.bootstrap_servers, topics, ids, send, timeout_s, codecs.graph_answers, settings, "query_id"
    )
