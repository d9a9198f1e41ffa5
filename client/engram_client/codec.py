"""Avro single-object encoding of Engram's contracts, as a worker reads and writes them.

``C3 01`` + the 8-byte CRC-64-AVRO fingerprint of the writer schema + the binary body. The client
writes with the schemas it carries (``engram_client/avro``, copies of the server's ``schemas/avro``
that a test keeps identical) and reads compiled contexts written with the same schema.
"""

from __future__ import annotations

import io
import json
from functools import cache
from importlib import resources
from typing import Any

import fastavro
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

MAGIC = b"\xc3\x01"


class ClientCodecError(ValueError):
    """A record that does not fit its contract, or bytes that are not one."""


@cache
def _schema(name: str) -> tuple[Any, bytes]:
    text = resources.files("engram_client").joinpath("avro", f"{name}.avsc").read_text(encoding="utf-8")
    raw = json.loads(text)
    canonical = to_parsing_canonical_form(parse_schema(dict(raw), _write_hint=False))
    return parse_schema(raw), bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))


def encode(name: str, record: dict[str, Any]) -> bytes:
    schema, print_ = _schema(name)
    buf = io.BytesIO()
    buf.write(MAGIC + print_)
    try:
        fastavro.schemaless_writer(buf, schema, record)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
        msg = f"cannot encode {name}: {type(exc).__name__}: {exc}"
        raise ClientCodecError(msg) from exc
    return buf.getvalue()


def decode(name: str, data: bytes) -> dict[str, Any]:
    schema, print_ = _schema(name)
    if data[:2] != MAGIC or data[2:10] != print_:
        msg = f"not a {name} written with this client's schema"
        raise ClientCodecError(msg)
    try:
        record = fastavro.schemaless_reader(io.BytesIO(data[10:]), schema, None, return_record_name=True)
    except (EOFError, ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError) as exc:
        msg = f"corrupt {name}: {type(exc).__name__}: {exc}"
        raise ClientCodecError(msg) from exc
    if not isinstance(record, dict):
        msg = f"{name} did not decode to a record"
        raise ClientCodecError(msg)
    return record
