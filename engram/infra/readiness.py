"""Readiness probes: each asks a server a real question over its own protocol.

A probe returns None when the server answered, else a short reason (kept for the error
message when the server never becomes ready).
"""

from __future__ import annotations

import socket
import struct
from typing import Final

import falkordb
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from redis.exceptions import RedisError

from engram.infra.processes import tcp_accepts

_PROBE_GRAPH: Final = "engram_probe"
_PROBE_TOPIC: Final = "engram-probe"
_BOLT_MAGIC: Final = 0x6060B017
# Bolt versions proposed in the handshake (major.minor, big-endian [0, range, minor, major]).
_BOLT_VERSIONS: Final = (0x00000505, 0x00000404, 0x00000004, 0x00000003)


def probe_broker(bootstrap: str, timeout_s: float, *, write_check: bool = False) -> str | None:
    """Metadata answered (and, with `write_check`, a probe topic was created and deleted)."""
    host, _, port = bootstrap.rpartition(":")
    if not tcp_accepts(host, int(port), timeout_s):
        return f"no TCP listener on {bootstrap}"
    # log_level 3 (errors): a probe's client is dropped right after use, and librdkafka would
    # otherwise print informational lines about the events it purges.
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout_s * 1000), "log_level": 3})
    try:
        admin.list_topics(timeout=timeout_s)
        if write_check:
            for future in admin.create_topics([NewTopic(_PROBE_TOPIC, 1, 1)]).values():
                future.result(timeout=timeout_s)
            for future in admin.delete_topics([_PROBE_TOPIC]).values():
                future.result(timeout=timeout_s)
    except KafkaException as exc:
        return f"broker did not answer: {exc}"
    return None


def probe_falkordb(host: str, port: int, timeout_s: float) -> str | None:
    """FalkorDB's native protocol ran ``RETURN 1`` on a graph."""
    if not tcp_accepts(host, port, timeout_s):
        return f"no TCP listener on {host}:{port}"
    try:
        with falkordb.FalkorDB(host=host, port=port, socket_timeout=timeout_s, socket_connect_timeout=timeout_s) as db:
            rows = db.select_graph(_PROBE_GRAPH).query("RETURN 1").result_set
    except (RedisError, OSError) as exc:
        return f"FalkorDB did not answer: {exc}"
    if rows != [[1]]:
        return f"FalkorDB answered RETURN 1 with {rows!r}"
    return None


def probe_bolt(host: str, port: int, timeout_s: float) -> str | None:
    """A Bolt version handshake succeeded.

    Deliberately not a neo4j-driver session: measured here, FalkorDB's Bolt port hangs the
    connection that follows a driver's closed one (until the driver's acquisition timeout), so a
    probe through the driver would stall the first real client.
    """
    request = struct.pack(">I4I", _BOLT_MAGIC, *_BOLT_VERSIONS)
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(request)
            reply = _recv_exactly(sock, 4)
    except OSError as exc:
        return f"no Bolt handshake on {host}:{port}: {exc}"
    (version,) = struct.unpack(">I", reply)
    if version == 0:
        return f"Bolt server on {host}:{port} accepted none of the proposed versions"
    return None


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            msg = "connection closed during the Bolt handshake"
            raise ConnectionError(msg)
        data += chunk
    return data
