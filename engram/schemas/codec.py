"""Avro codec for Engram's topics.

Two wire formats, chosen by configuration, never at import:
- **Single-object encoding** (Avro spec): ``C3 01`` + 8-byte CRC-64-AVRO fingerprint of the writer
  schema + the binary body. The default; needs no registry. Old writer schemas are found by
  fingerprint among the schemas in ``schemas/avro/`` and ``schemas/avro/history/`` and resolved to
  the current reader schema.
- **Confluent wire format** (magic 0 + 4-byte schema id + body) through confluent-kafka's
  schema-registry serde, when a registry URL is configured. Such a codec also reads single-object
  messages (a producer not told of the registry): it then understands the request and its answer
  tells the producer which setting it lacks, instead of a dead letter nobody answers.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final, Generic, TypeVar, cast

import fastavro
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"
HEADER_LEN: Final = 10
SCHEMA_NAMES: Final = (
    "ConversationTurn",
    "CodeChange",
    "ContextRequest",
    "CompiledContext",
    "GraphRequest",
    "GraphAnswer",
    "RelationshipChanged",
    "ErasureRequested",
    "MemoryEvent",
    "DeadLetter",
    "LoggedEvent",
)

T = TypeVar("T")


class CodecError(ValueError):
    """A message could not be encoded or decoded. The reason is in the message."""


class MalformedMessageError(CodecError):
    """The bytes are not a valid message for this codec (bad header, truncated body, bad data)."""


class UnknownSchemaError(CodecError):
    """The writer schema's fingerprint or id is not one Engram knows."""


class IncompatibleSchemaError(CodecError):
    """The writer schema cannot be resolved to the reader schema."""


def _schema_text(name: str, folder: str = "avro") -> str:
    return resources.files("engram.schemas").joinpath(folder, f"{name}.avsc").read_text(encoding="utf-8")


@cache
def schema_json(name: str) -> dict[str, Any]:
    """The current `.avsc` of a schema, as JSON."""
    if name not in SCHEMA_NAMES:
        msg = f"unknown schema {name!r}; known: {', '.join(SCHEMA_NAMES)}"
        raise KeyError(msg)
    return cast(dict[str, Any], json.loads(_schema_text(name)))


@cache
def parsed_schema(name: str) -> dict[str, Any]:
    return cast(dict[str, Any], parse_schema(schema_json(name)))


def schema_fingerprint(schema: Mapping[str, Any]) -> bytes:
    """The 8-byte CRC-64-AVRO fingerprint, in the byte order single-object encoding uses."""
    canonical = to_parsing_canonical_form(parse_schema(dict(schema), _write_hint=False))
    return bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


def _history_schemas(name: str) -> list[dict[str, Any]]:
    """Older writer schemas kept for decoding old data: ``history/<Name>.v<N>.avsc``."""
    folder = resources.files("engram.schemas").joinpath("avro", "history")
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith(f"{name}.v") and entry.name.endswith(".avsc"):
            found.append(json.loads(entry.read_text(encoding="utf-8")))
    return found


def history_schema(name: str, version: int) -> dict[str, Any]:
    """An older writer schema: ``history/<Name>.v<version>.avsc``."""
    return dict(json.loads(_schema_text(f"{name}.v{version}", "avro/history")))


def encode_as_writer(writer_schema: Mapping[str, Any], record: Mapping[str, Any]) -> bytes:
    """``record`` as a producer with ``writer_schema`` encodes it (single-object encoding, that
    schema's fingerprint): how data written before a schema evolution looks."""
    buf = io.BytesIO()
    buf.write(SINGLE_OBJECT_MAGIC + schema_fingerprint(writer_schema))
    fastavro.schemaless_writer(buf, parse_schema(dict(writer_schema)), dict(record))
    return buf.getvalue()


@dataclass(frozen=True, slots=True)
class CodecConfig:
    """How values are framed on the wire. ``registry_url`` set → Confluent wire format."""

    registry_url: str | None = None
    registry_config: Mapping[str, str] | None = None


class AvroCodec(Generic[T]):
    """Encode and decode one schema's records in single-object encoding.

    ``writers`` maps fingerprints of known writer schemas (current and historical) to their
    parsed form; decoding resolves them to the current reader schema.
    """

    def __init__(self, name: str, extra_writer_schemas: list[Mapping[str, Any]] | None = None) -> None:
        self.name = name
        self.schema = parsed_schema(name)
        self.fingerprint = schema_fingerprint(schema_json(name))
        self._header = SINGLE_OBJECT_MAGIC + self.fingerprint
        self._writers: dict[bytes, dict[str, Any]] = {self.fingerprint: self.schema}
        for old in [*_history_schemas(name), *(extra_writer_schemas or [])]:
            self._writers[schema_fingerprint(old)] = cast(dict[str, Any], parse_schema(dict(old), _write_hint=False))

    def encode(self, record: T) -> bytes:
        buf = io.BytesIO()
        buf.write(self._header)
        try:
            fastavro.schemaless_writer(buf, self.schema, record)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            msg = f"cannot encode {self.name}: {type(exc).__name__}: {exc}"
            raise CodecError(msg) from exc
        return buf.getvalue()

    def decode(self, data: bytes) -> T:
        if len(data) < HEADER_LEN or data[:2] != SINGLE_OBJECT_MAGIC:
            msg = f"not an Avro single-object message for {self.name} (bad magic or too short: {len(data)} bytes)"
            raise MalformedMessageError(msg)
        writer = self._writers.get(data[2:HEADER_LEN])
        if writer is None:
            msg = f"unknown writer schema fingerprint {data[2:HEADER_LEN].hex()} for {self.name}"
            raise UnknownSchemaError(msg)
        return self._read(io.BytesIO(data[HEADER_LEN:]), writer, data)

    def _read(self, buf: io.BytesIO, writer: dict[str, Any], data: bytes) -> T:
        try:
            record = fastavro.schemaless_reader(
                buf,
                writer,
                self.schema if writer is not self.schema else None,
                return_record_name=True,
                return_record_name_override=True,
            )
        except fastavro.read.SchemaResolutionError as exc:
            msg = f"writer schema cannot be resolved to {self.name}: {exc}"
            raise IncompatibleSchemaError(msg) from exc
        except (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError) as exc:
            msg = f"corrupt {self.name} body ({len(data)} bytes): {type(exc).__name__}: {exc}"
            raise MalformedMessageError(msg) from exc
        if buf.tell() != len(buf.getbuffer()):
            msg = f"trailing bytes after {self.name} body ({len(buf.getbuffer()) - buf.tell()} left)"
            raise MalformedMessageError(msg)
        return cast(T, record)


class ConfluentCodec(Generic[T]):
    """Confluent wire format through a schema registry (``mock://`` works in process for tests)."""

    def __init__(self, name: str, topic: str, config: CodecConfig) -> None:
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        if not config.registry_url:
            msg = "ConfluentCodec needs CodecConfig.registry_url"
            raise ValueError(msg)
        self.name = name
        conf = {"url": config.registry_url, **dict(config.registry_config or {})}
        client = (
            SchemaRegistryClient.new_client(conf)
            if config.registry_url.startswith("mock://")
            else (SchemaRegistryClient(conf))
        )
        text = json.dumps(schema_json(name))
        self._ser = AvroSerializer(client, text, conf={"auto.register.schemas": True})
        self._de = AvroDeserializer(client, text, return_record_name=True)
        self._ctx = SerializationContext(topic, MessageField.VALUE)
        self._single: AvroCodec[T] = AvroCodec(name)

    def encode(self, record: T) -> bytes:
        try:
            return cast(bytes, self._ser(record, self._ctx))
        except Exception as exc:
            msg = f"cannot encode {self.name} (registry): {type(exc).__name__}: {exc}"
            raise CodecError(msg) from exc

    def decode(self, data: bytes) -> T:
        if data[:2] == SINGLE_OBJECT_MAGIC:
            return self._single.decode(data)
        if len(data) < 5 or data[0] != 0:
            msg = f"not a Confluent wire-format message for {self.name} ({len(data)} bytes)"
            raise MalformedMessageError(msg)
        try:
            return cast(T, self._de(data, self._ctx))
        except Exception as exc:
            msg = f"cannot decode {self.name} (registry): {type(exc).__name__}: {exc}"
            raise MalformedMessageError(msg) from exc


def make_codec(name: str, topic: str, config: CodecConfig) -> AvroCodec[Any] | ConfluentCodec[Any]:
    """The codec a topic uses under this configuration."""
    if config.registry_url:
        return ConfluentCodec(name, topic, config)
    return AvroCodec(name)
