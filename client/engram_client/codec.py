"""Engram's contracts on the wire, in either codec mode a worker runs in.

- **Single-object encoding** (a worker without ``ENGRAM_SCHEMA_REGISTRY_URL``): ``C3 01`` + the
  8-byte CRC-64-AVRO fingerprint of the writer schema + the binary body. Written with the schemas
  the client carries (``engram_client/avro``, copies of the server's ``schemas/avro`` that a test
  keeps identical); read with any of them or of the older writer schemas it carries
  (``avro/history``), resolved to the current one, so an SDK reads a worker one version older.
- **Confluent wire format** (a worker with a registry): ``00`` + a 4-byte schema id + the body,
  through confluent-kafka's schema-registry serde, each schema registered under
  ``<topic>-value`` as the worker registers it. Needs the ``registry`` extra (httpx, attrs,
  cachetools, authlib).

`ClientCodec.decode` tells the two apart by the first byte, so it reads an answer in either; what
it cannot read raises `ClientCodecError`, naming the setting that is missing.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Final

import fastavro
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

MAGIC: Final = b"\xc3\x01"
HEADER_LEN: Final = 10
CONFLUENT_MAGIC: Final = 0
CONFLUENT_HEADER_LEN: Final = 5
REGISTRY_EXTRA: Final = "httpx attrs cachetools authlib"
_DECODE_ERRORS = (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError)


class ClientCodecError(ValueError):
    """A record that does not fit its contract, or bytes that are not one."""


class RegistryError(ClientCodecError):
    """The schema registry failed a call (unreachable, refused, no such schema id)."""


def _text(*parts: str) -> str:
    return resources.files("engram_client").joinpath("avro", *parts).read_text(encoding="utf-8")


def _fingerprint(raw: Mapping[str, Any]) -> bytes:
    canonical = to_parsing_canonical_form(parse_schema(dict(raw), _write_hint=False))
    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


@cache
def schema_text(name: str) -> str:
    """The carried ``.avsc`` of ``name``, as the registry is given it (the worker's text too)."""
    return json.dumps(json.loads(_text(f"{name}.avsc")))


@cache
def _schema(name: str) -> tuple[Any, bytes]:
    raw = json.loads(_text(f"{name}.avsc"))
    return parse_schema(raw), _fingerprint(raw)


@cache
def _writers(name: str) -> dict[bytes, Any]:
    """Every writer schema of ``name`` the client reads, by fingerprint: the current one and the
    older ones under ``avro/history`` (``<Name>.v<N>.avsc``)."""
    current, print_ = _schema(name)
    found: dict[bytes, Any] = {print_: current}
    history = resources.files("engram_client").joinpath("avro", "history")
    for entry in sorted(history.iterdir(), key=lambda e: e.name) if history.is_dir() else []:
        if entry.name.startswith(f"{name}.v") and entry.name.endswith(".avsc"):
            raw = json.loads(entry.read_text(encoding="utf-8"))
            found[_fingerprint(raw)] = parse_schema(raw, _write_hint=False)
    return found


def encode(name: str, record: Mapping[str, Any]) -> bytes:
    """``record`` in single-object encoding, with the carried schema."""
    schema, print_ = _schema(name)
    buf = io.BytesIO()
    buf.write(MAGIC + print_)
    try:
        fastavro.schemaless_writer(buf, schema, dict(record))
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        msg = f"cannot encode {name}: {type(exc).__name__}: {exc}"
        raise ClientCodecError(msg) from exc
    return buf.getvalue()


def decode(name: str, data: bytes) -> dict[str, Any]:
    """A single-object ``name`` written with the carried schema or an older one it carries."""
    if len(data) < HEADER_LEN or data[:2] != MAGIC:
        msg = f"not an Avro single-object {name} ({len(data)} bytes)"
        raise ClientCodecError(msg)
    writer = _writers(name).get(data[2:HEADER_LEN])
    if writer is None:
        msg = (
            f"{name} written with a schema this client does not carry (fingerprint {data[2:HEADER_LEN].hex()}): "
            "a worker more than one version newer? upgrade engram-client"
        )
        raise ClientCodecError(msg)
    reader, _ = _schema(name)
    buf = io.BytesIO(data[HEADER_LEN:])
    try:
        record = fastavro.schemaless_reader(
            buf, writer, reader if writer is not reader else None, return_record_name=True
        )
    except _DECODE_ERRORS as exc:
        msg = f"corrupt {name}: {type(exc).__name__}: {exc}"
        raise ClientCodecError(msg) from exc
    if not isinstance(record, dict):
        msg = f"{name} did not decode to a record"
        raise ClientCodecError(msg)
    return record


def leading_string(data: bytes) -> str | None:
    """The first field of a record, read as an Avro string under either framing (a CompiledContext's
    ``request_id``): who an answer was for when the rest cannot be read. None if it is not one."""
    start = HEADER_LEN if data[:2] == MAGIC else CONFLUENT_HEADER_LEN if data[:1] == b"\x00" else None
    if start is None:
        return None
    shift = length = 0
    for i, byte in enumerate(data[start : start + 10]):
        length |= (byte & 0x7F) << shift
        if not byte & 0x80:
            size, begin = (length >> 1) ^ -(length & 1), start + i + 1
            if not 0 < size <= 256 or begin + size > len(data):
                return None
            try:
                return data[begin : begin + size].decode("utf-8")
            except UnicodeDecodeError:
                return None
        shift += 7
    return None


class ClientCodec:
    """Encode in the workers' codec mode (``registry_url`` set: Confluent wire format through that
    registry; unset: single-object encoding); decode either. ``registry_settings``: more
    schema-registry client settings (``basic.auth.user.info``, ``ssl.ca.location``, ...).
    Thread-safe: the client encodes on its event loop and decodes on its reply thread."""

    def __init__(self, registry_url: str | None = None, registry_settings: Mapping[str, Any] | None = None) -> None:
        self.registry_url = registry_url
        self._settings = {"url": registry_url, **dict(registry_settings or {})}
        self._lock = threading.Lock()
        self._registry: Any = None
        self._serde: dict[tuple[str, str, str], Any] = {}

    @property
    def mode(self) -> str:
        return "registry" if self.registry_url else "single-object"

    def encode(self, name: str, topic: str, record: Mapping[str, Any]) -> bytes:
        checked = encode(name, record)  # a record that breaks its contract is the caller's, not the registry's
        if not self.registry_url:
            return checked
        try:
            return bytes(self._serde_for("write", name, topic)(dict(record), self._context(topic)))
        except ClientCodecError:
            raise
        except Exception as exc:  # the registry's client raises its own and httpx's errors
            msg = f"cannot encode {name} for {topic} (registry {self.registry_url}): {type(exc).__name__}: {exc}"
            raise RegistryError(msg) from exc

    def decode(self, name: str, topic: str, data: bytes) -> dict[str, Any]:
        if data[:2] == MAGIC:
            return decode(name, data)
        if len(data) < CONFLUENT_HEADER_LEN or data[0] != CONFLUENT_MAGIC:
            msg = f"{name} on {topic} is neither Avro single-object nor Confluent wire format ({len(data)} bytes)"
            raise ClientCodecError(msg)
        schema_id = int.from_bytes(data[1:CONFLUENT_HEADER_LEN], "big")
        if not self.registry_url:
            msg = (
                f"{name} on {topic} is in the Confluent wire format (schema id {schema_id}): the workers use a "
                "schema registry; set ClientConfig.schema_registry_url to their ENGRAM_SCHEMA_REGISTRY_URL"
            )
            raise ClientCodecError(msg)
        try:
            record = self._serde_for("read", name, topic)(data, self._context(topic))
        except ClientCodecError:
            raise
        except Exception as exc:
            where = f"{name} on {topic} (schema id {schema_id}, registry {self.registry_url})"
            msg = f"cannot decode {where}: {type(exc).__name__}: {exc}"
            raise RegistryError(msg) from exc
        if not isinstance(record, dict):
            msg = f"{name} did not decode to a record"
            raise ClientCodecError(msg)
        return record

    def _serde_for(self, way: str, name: str, topic: str) -> Any:
        with self._lock:
            found = self._serde.get((way, name, topic))
            if found is None:
                found = self._serde[(way, name, topic)] = self._make(way, name)
            return found

    def _make(self, way: str, name: str) -> Any:
        try:
            from confluent_kafka.schema_registry import SchemaRegistryClient
            from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
        except ImportError as exc:  # the registry extra is not installed
            msg = f"the registry codec needs confluent-kafka's schema-registry client: pip install {REGISTRY_EXTRA}"
            raise RegistryError(msg) from exc
        if self._registry is None:
            self._registry = SchemaRegistryClient.new_client(self._settings)
        if way == "write":
            return AvroSerializer(self._registry, schema_text(name), conf={"auto.register.schemas": True})
        return AvroDeserializer(self._registry, schema_text(name), return_record_name=True)

    @staticmethod
    def _context(topic: str) -> Any:
        from confluent_kafka.serialization import MessageField, SerializationContext

        return SerializationContext(topic, MessageField.VALUE)
