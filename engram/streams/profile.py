"""The broker profile: every client setting that differs between brokers, chosen by name in config.

A worker, the demo and the tools ask `EngramConfig.profile` for the Faust, librdkafka and Bolt
settings of their clients, and for nothing else: no code checks which broker it runs on. Two
presets: `KAFKA` (production, docker-compose.yml) adds nothing to the clients' defaults;
`STANDIN` (the demo, tests and CI on tansu and FalkorDB) carries the workarounds measured in
`infra.standins`. ``ENGRAM_BROKER_PROFILE`` picks one (streams/config.py).

**Not in the profile, on in both, because they fix the Faust client, not the broker:** the
repairs in `engram.streams.repairs` (its docstring is the index, each with its pin and upstream
issue), among them the recovery reorder (`repairs.recovery.ClearFirstTables`, the app's
``TableManager``) and gap repair (`repairs.gaps`). Faust's and aiokafka's code paths drop records
whatever the broker; the one-record batches were first blamed on tansu for those skips, and
re-measured, tansu serves a fetch at any offset inside a batch exactly (`infra.standins`,
STANDIN_EVENT_PRODUCER_SETTINGS). On a healthy consumer gap repair reads nothing
(``engram_offset_gaps_total`` stays 0), so it costs a production worker one offset scan per batch.

What the profile does select from that package: the stand-in's ``TableManager`` is the subclass
`repairs.recovery.FetchedEndsTables` (``fetch_changelog_ends``), which also reads each changelog
to the end a fetch finds (`repairs.ends`), since tansu's ``ListOffsets`` end stops inside the last
batch; and the worker's fetch max-wait is set by the patch in `repairs.fetch_wait`
(``worker_fetch_max_wait_ms``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from engram.infra.standins import (
    STANDIN_CLIENT_SETTINGS,
    STANDIN_EVENT_PRODUCER_SETTINGS,
    STANDIN_FAUST_SETTINGS,
    STANDIN_FETCH_MAX_WAIT_MS,
    STANDIN_NEO4J_DRIVER_SETTINGS,
    STANDIN_REQUEST_FETCH_WAIT_MS,
    ClientRole,
    LibrdkafkaSettings,
    Neo4jDriverSettings,
)

ClientSettings = dict[str, str | int | float | bool]


def _nothing() -> Mapping[str, object]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class BrokerProfile:
    """The settings one kind of broker (and graph server) needs from Engram's clients.

    Every field's empty value means "the client library's default", and the `KAFKA` preset is all
    empty. Methods return fresh dicts, ready to be merged into a client's own settings.
    """

    # The name ``ENGRAM_BROKER_PROFILE`` selects this profile by.
    name: str
    # Extra ``faust.App`` settings (seconds): group timeouts.
    faust: Mapping[str, object] = field(default_factory=_nothing)
    # Extra librdkafka settings per client role (consumer, producer, admin).
    clients: Mapping[ClientRole, LibrdkafkaSettings] = field(default_factory=lambda: MappingProxyType({}))
    # Extra librdkafka settings, on top of the producer role's, for producers of topics Engram's
    # workers consume (inputs, derived events, replies).
    event_producer: LibrdkafkaSettings = field(default_factory=lambda: MappingProxyType({}))
    # The Faust worker consumer's fetch max-wait (ms), set by patching Faust's aiokafka consumer
    # (`streams.repairs.fetch_wait.use_short_fetch_wait`); None keeps Faust's 1500 ms and patches nothing.
    worker_fetch_max_wait_ms: int | None = None
    # ``fetch.wait.max.ms`` of the shared-memory follower (streams/follow.py); None = librdkafka's.
    follower_fetch_wait_ms: int | None = None
    # ``fetch.wait.max.ms`` of latency-minded readers of low-volume topics: the worker's request
    # reader and clients waiting for compiled contexts; None = librdkafka's.
    request_fetch_wait_ms: int | None = None
    # Whether the broker's ``ListOffsets`` end is wrong, so that table recovery reads each changelog
    # to the end a fetch finds (streams/repairs/ends.py, streams/repairs/recovery.py: FetchedEndsTables).
    fetch_changelog_ends: bool = False
    # ``neo4j.GraphDatabase.driver`` keywords for the graph server's Bolt port. Only the tests'
    # shared Bolt driver reads them (tests/conftest.py): a worker on the stand-ins writes FalkorDB
    # through its native client, and in production Neo4j needs nothing extra.
    bolt_driver: Neo4jDriverSettings = field(default_factory=Neo4jDriverSettings)

    def faust_settings(self) -> dict[str, object]:
        """Extra ``faust.App`` keywords, to update the worker's own settings with."""
        return dict(self.faust)

    def client_settings(self, role: ClientRole) -> ClientSettings:
        """Extra librdkafka settings for a confluent-kafka client in ``role``."""
        return dict(self.clients.get(role, {}))

    def event_producer_settings(self) -> ClientSettings:
        """Extra librdkafka settings for a producer of topics Engram's workers consume."""
        return {**self.client_settings("producer"), **self.event_producer}

    def follower_settings(self) -> ClientSettings:
        """Extra librdkafka settings for the shared-memory follower (it never joins a group)."""
        return _fetch_wait(self.follower_fetch_wait_ms)

    def request_consumer_settings(self) -> ClientSettings:
        """Extra librdkafka settings for a latency-minded reader of requests or compiled contexts."""
        return _fetch_wait(self.request_fetch_wait_ms)

    def neo4j_driver_settings(self) -> Neo4jDriverSettings:
        """Extra ``neo4j.GraphDatabase.driver`` keywords."""
        return self.bolt_driver.copy()

    def apply_worker_fetch_wait(self) -> None:
        """Patch this process's Faust worker consumers to `worker_fetch_max_wait_ms`, if set.

        Call it before the app's consumer is created. Process-wide (see
        `streams.repairs.fetch_wait.use_short_fetch_wait`): a process runs one worker, with one profile.
        """
        if self.worker_fetch_max_wait_ms is None:
            return
        from engram.streams.repairs.fetch_wait import use_short_fetch_wait

        use_short_fetch_wait(self.worker_fetch_max_wait_ms)


def _fetch_wait(wait_ms: int | None) -> ClientSettings:
    return {} if wait_ms is None else {"fetch.wait.max.ms": wait_ms}


# Production: Apache Kafka answers a fetch as soon as data arrives, joins a group in well under a
# second, reports true end offsets and supports idempotent producers. Nothing is added.
KAFKA: Final = BrokerProfile("kafka")

# The embedded stand-ins: tansu 0.6.0 and FalkorDB 4.16's Bolt port. Each value and what was
# measured for it is documented in infra/standins.py.
STANDIN: Final = BrokerProfile(
    "standin",
    faust=STANDIN_FAUST_SETTINGS,
    clients=STANDIN_CLIENT_SETTINGS,
    event_producer=STANDIN_EVENT_PRODUCER_SETTINGS,
    worker_fetch_max_wait_ms=STANDIN_FETCH_MAX_WAIT_MS,
    follower_fetch_wait_ms=STANDIN_FETCH_MAX_WAIT_MS,
    request_fetch_wait_ms=STANDIN_REQUEST_FETCH_WAIT_MS,
    fetch_changelog_ends=True,
    bolt_driver=STANDIN_NEO4J_DRIVER_SETTINGS,
)

PROFILES: Final[Mapping[str, BrokerProfile]] = MappingProxyType({p.name: p for p in (KAFKA, STANDIN)})
