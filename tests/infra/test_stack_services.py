"""The session stack answers over each real protocol: Kafka produce/consume, FalkorDB, Bolt."""

from __future__ import annotations

import time

import falkordb
import neo4j
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from engram.infra.config import StackInfo
from engram.streams.profile import STANDIN

pytestmark = pytest.mark.integration


def test_broker_delivers_one_message_through_a_consumer_group(stack: StackInfo, unique_name: str) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}-turns"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=10)

    producer = Producer({"bootstrap.servers": bootstrap, **STANDIN.client_settings("producer")})
    producer.produce(topic, key=b"user-1", value=b"hello engram")
    assert producer.flush(10) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name,
            "auto.offset.reset": "earliest",
            **STANDIN.client_settings("consumer"),
        }
    )
    try:
        consumer.subscribe([topic])
        received: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 20
        while not received and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                continue
            received.append((message.key(), message.value()))
    finally:
        consumer.close()
    assert received == [(b"user-1", b"hello engram")]


def test_falkordb_runs_a_query_on_a_graph(stack: StackInfo, unique_name: str) -> None:
    host, port = stack.require_falkordb()
    with falkordb.FalkorDB(host=host, port=port) as db:
        graph = db.select_graph(unique_name)
        graph.query("CREATE (:Turn {id: $id, text: $text})", {"id": "t1", "text": "hello"})
        rows = graph.query("MATCH (t:Turn {id: $id}) RETURN t.text", {"id": "t1"}).result_set
        graph.delete()
    assert rows == [["hello"]]


def test_bolt_port_answers_the_neo4j_driver(bolt_driver: neo4j.Driver) -> None:
    records, _, _ = bolt_driver.execute_query("RETURN 1 AS one")
    assert [record["one"] for record in records] == [1]


def test_qdrant_folders_are_distinct_and_created(stack: StackInfo, unique_name: str) -> None:
    first = stack.qdrant_folder(f"{unique_name}-a")
    second = stack.qdrant_folder(f"{unique_name}-b")
    assert first != second
    assert first.is_dir() and second.is_dir()
    assert stack.qdrant_path is not None and first.parent == stack.qdrant_path
