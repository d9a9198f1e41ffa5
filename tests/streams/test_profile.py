"""The broker profiles (streams/profile.py): production adds nothing to any client, the stand-in
carries each measured workaround, and every client of a worker takes its settings from the
config's profile."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import FrozenInstanceError
from typing import Any, cast

import faust
import pytest
from faust.transport.drivers import aiokafka as faust_aiokafka

from engram.infra.standins import STANDIN_FETCH_MAX_WAIT_MS, STANDIN_REQUEST_FETCH_WAIT_MS
from engram.streams.admin import event_producer_settings
from engram.streams.agents.requests import LOW_LATENCY_SOCKET, low_latency_consumer_settings, reply_producer_settings
from engram.streams.app import faust_settings
from engram.streams.config import EngramConfig
from engram.streams.follow import follower_settings
from engram.streams.profile import KAFKA, PROFILES, STANDIN, BrokerProfile
from engram.streams.repairs.recovery import ClearFirstTables, FetchedEndsTables

# Every key a stand-in workaround sets, in Faust's settings or librdkafka's.
STANDIN_FAUST_KEYS = {
    "broker_session_timeout",
    "broker_heartbeat_interval",
    "broker_rebalance_timeout",
    "producer_max_batch_size",
}
STANDIN_CLIENT_KEYS = {
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "enable.partition.eof",
    "enable.idempotence",
    "batch.num.messages",
    "fetch.wait.max.ms",
}


def test_presets_are_named_and_frozen() -> None:
    assert dict(PROFILES) == {"kafka": KAFKA, "standin": STANDIN}
    with pytest.raises(FrozenInstanceError):
        preset = cast("Any", KAFKA)  # the type checker refuses the write this asserts fails
        preset.name = "other"
    with pytest.raises(TypeError):  # the presets are shared: their mappings are read-only
        cast("dict[str, object]", STANDIN.faust)["producer_max_batch_size"] = 500


def test_kafka_profile_adds_nothing_to_any_client() -> None:
    assert BrokerProfile("kafka") == KAFKA
    assert KAFKA.faust_settings() == {}
    assert all(KAFKA.client_settings(role) == {} for role in ("consumer", "producer", "admin"))
    assert KAFKA.event_producer_settings() == {}
    assert KAFKA.follower_settings() == {} and KAFKA.request_consumer_settings() == {}
    assert KAFKA.neo4j_driver_settings() == {}
    assert KAFKA.worker_fetch_max_wait_ms is None


def test_a_production_worker_gets_none_of_the_standin_settings() -> None:
    config = EngramConfig()
    assert config.profile is KAFKA
    assert not STANDIN_FAUST_KEYS & set(faust_settings(config))
    client_settings = [
        event_producer_settings(config),
        reply_producer_settings(config),
        low_latency_consumer_settings(config),
        follower_settings(config),
    ]
    for settings in client_settings:
        assert not STANDIN_CLIENT_KEYS & set(settings), settings
    assert low_latency_consumer_settings(config) == LOW_LATENCY_SOCKET


def test_a_standin_worker_gets_the_measured_workarounds() -> None:
    config = EngramConfig(broker_profile="standin")
    settings = faust_settings(config)
    assert settings["broker_session_timeout"] == settings["broker_rebalance_timeout"] == 4.0
    assert settings["broker_heartbeat_interval"] == 0.5
    # Table recovery reads each changelog to the end a fetch finds, so changelogs are written in batches.
    assert "producer_max_batch_size" not in settings
    assert settings["TableManager"] is FetchedEndsTables
    assert event_producer_settings(config) == {"enable.idempotence": False}  # batches as the client makes them
    assert reply_producer_settings(config)["enable.idempotence"] is False
    assert low_latency_consumer_settings(config)["fetch.wait.max.ms"] == STANDIN_REQUEST_FETCH_WAIT_MS
    assert follower_settings(config) == {"fetch.wait.max.ms": STANDIN_FETCH_MAX_WAIT_MS}


def test_broker_independent_faust_settings_are_in_both_profiles() -> None:
    for name in PROFILES:
        settings = faust_settings(EngramConfig(broker_profile=name))
        assert issubclass(settings["TableManager"], ClearFirstTables)  # a Faust race, not a broker's
        assert settings["processing_guarantee"] == "at_least_once"


def test_standin_client_settings_by_role() -> None:
    consumer = STANDIN.client_settings("consumer")
    assert 2000 <= int(consumer["session.timeout.ms"]) <= 6000  # measured to join quickly on tansu
    assert int(consumer["heartbeat.interval.ms"]) < int(consumer["session.timeout.ms"])
    assert consumer["enable.partition.eof"] is True
    assert STANDIN.client_settings("producer") == {"enable.idempotence": False}
    assert STANDIN.client_settings("admin") == {}
    assert STANDIN.neo4j_driver_settings()["max_connection_pool_size"] == 1


def test_settings_are_fresh_copies() -> None:
    STANDIN.event_producer_settings()["enable.idempotence"] = True
    STANDIN.neo4j_driver_settings()["max_connection_pool_size"] = 8
    assert STANDIN.event_producer_settings()["enable.idempotence"] is False
    assert STANDIN.neo4j_driver_settings()["max_connection_pool_size"] == 1


@pytest.fixture
def restore_faust_consumer(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Undo the process-wide fetch-wait patch after the test."""
    original = vars(faust_aiokafka.Consumer)["_new_consumer_thread"]
    monkeypatch.setattr(faust_aiokafka.Consumer, "_new_consumer_thread", original)
    yield


def worker_fetch_wait_ms(profile: BrokerProfile) -> int:
    """The fetch max-wait (ms) of the aiokafka consumer a Faust worker builds under ``profile``."""

    async def build() -> int:
        profile.apply_worker_fetch_wait()
        app = faust.App("engram-profile-probe", broker="kafka://127.0.0.1:9")
        thread: Any = cast("Any", app.consumer)._thread  # Faust's typed ConsumerT hides its thread
        consumer = thread._create_worker_consumer(app.transport)
        try:
            return int(consumer._fetch_max_wait_ms)
        finally:
            await consumer.stop()
            thread.thread_loop.close()  # the consumer thread's own loop; the thread never started

    return asyncio.run(build())


@pytest.mark.usefixtures("restore_faust_consumer")
def test_only_the_standin_profile_patches_the_worker_fetch_wait() -> None:
    assert worker_fetch_wait_ms(KAFKA) == 1500  # Faust's own value: the patch is not applied
    assert worker_fetch_wait_ms(STANDIN) == STANDIN_FETCH_MAX_WAIT_MS
