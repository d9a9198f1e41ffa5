"""Sealing: a logged record's key and value encrypted under its subject's key (crypto-shredding).

The event log is immutable, yet a user must be erasable (ARCHITECTURE.md, "Erasure"). So each
user-scoped record is sealed with a key of its own subject; erasing the subject deletes that key,
and every record it sealed becomes unreadable wherever the log was copied. This module is the
pure part: the cipher and the record format. Keys are kept by ``sinks/eventlog/keys.py``.

Format. A sealed record keeps topic, partition, offset and timestamp in the clear (the log is
ordered and cut by them) and replaces key and value by their ciphertext:

    ciphertext || tag = AES-256-GCM(subject key, nonce, key || value, aad)
    key   = ciphertext[:len(key)]             None stays None
    value = ciphertext[len(key):] || tag      a tombstone's None stays None (the tag ends the key)
    seal  = key id (16 bytes) || nonce (12)   the key id is random: it names no one

``aad`` binds the record's coordinates (topic, partition, offset), its timestamp, and which of key
and value are None, so a ciphertext moved to another record, a record moved in time, or a value
turned into a tombstone, fails to open.
A record with neither key nor value has nothing to hide and stays as it is.

Cost (measured by `engram bench trust`). One AES-GCM call per record: the call, not the bytes, is
what costs (about 1 us in `cryptography` for a few hundred bytes), so key and value share one. A
batch's nonces come from one read of the system's random source, its associated data from one
prefix per partition, and key id and nonce share one Avro field (each optional field costs
fastavro about half a microsecond per record). Nonces are random (96 bits): a subject key may seal
about 2**32 records before the chance of a repeated nonce reaches NIST's bound.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import count
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from engram.schemas.records import LoggedEvent, SealedEvent

KEY_ID_BYTES: Final = 16
KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
TAG_BYTES: Final = 16
SEAL_BYTES: Final = KEY_ID_BYTES + NONCE_BYTES
_AAD_DOMAIN: Final = b"engram.sealed.v1\x00"
_AAD_TAIL: Final = struct.Struct(">qqB")  # offset, timestamp, then bit 0: key is None, bit 1: value is None
_KEY_NONE: Final = 1
_VALUE_NONE: Final = 2

Entropy = Callable[[int], bytes]
"""Random bytes of the length asked (``os.urandom``; tests pass a deterministic one)."""


class SealError(Exception):
    """Base class of sealing failures."""


class MalformedSealError(SealError, ValueError):
    """A sealed record or a key whose fields have the wrong shape (lengths, a missing part)."""


class TamperedRecordError(SealError):
    """A sealed record that does not open under its key: altered, moved to other coordinates, or
    opened with another subject's key."""


@dataclass(frozen=True, slots=True, eq=False)
class SubjectKey:
    """One subject's key: ``key_id`` (16 random bytes, stored beside each record it seals) and the
    256-bit AES ``key``. The AES-GCM object is made once per key and kept with it, so dropping the
    key (erasure) drops the cipher too."""

    key_id: bytes
    key: bytes = field(repr=False)
    cipher: AESGCM = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.key_id) != KEY_ID_BYTES or len(self.key) != KEY_BYTES:
            msg = f"a subject key is {KEY_ID_BYTES} id bytes and {KEY_BYTES} key bytes"
            raise MalformedSealError(msg)
        object.__setattr__(self, "cipher", AESGCM(self.key))

    @classmethod
    def generate(cls, entropy: Entropy = os.urandom) -> SubjectKey:
        return cls(entropy(KEY_ID_BYTES), entropy(KEY_BYTES))

    def to_bytes(self) -> bytes:
        return self.key_id + self.key

    @classmethod
    def from_bytes(cls, raw: bytes) -> SubjectKey:
        if len(raw) != KEY_ID_BYTES + KEY_BYTES:
            msg = f"a stored subject key is {KEY_ID_BYTES + KEY_BYTES} bytes, got {len(raw)}"
            raise MalformedSealError(msg)
        return cls(raw[:KEY_ID_BYTES], raw[KEY_ID_BYTES:])


@lru_cache(maxsize=256)
def aad_prefix(topic: str, partition: int) -> bytes:
    """The part of a record's associated data shared by its partition (topic length-prefixed, so
    no two (topic, partition) pairs give the same bytes)."""
    name = topic.encode("utf-8")
    return _AAD_DOMAIN + struct.pack(">H", len(name)) + name + struct.pack(">i", partition)


def _flags(key: bytes | None, value: bytes | None) -> int:
    return (_KEY_NONE if key is None else 0) | (_VALUE_NONE if value is None else 0)


def seal_event(event: LoggedEvent, subject: SubjectKey, nonce: bytes) -> LoggedEvent:
    """``event`` sealed under ``subject`` with ``nonce`` (12 bytes, never used twice with a key)."""
    return seal_batch([event], [subject], lambda _n: nonce)[0]


def seal_batch(
    events: Sequence[LoggedEvent], subjects: Sequence[SubjectKey | None], entropy: Entropy = os.urandom
) -> list[LoggedEvent]:
    """Each event sealed under its subject's key, or kept as it is where the subject is None.

    The nonces of the whole batch come from one call of ``entropy``. The loop is written for speed
    (locals, no call per record but the cipher's): it runs for every record the log stores."""
    if len(events) != len(subjects):
        msg = f"{len(events)} events but {len(subjects)} subjects"
        raise MalformedSealError(msg)
    nonces = entropy(NONCE_BYTES * len(events))
    pack = _AAD_TAIL.pack
    out: list[LoggedEvent] = []
    append = out.append
    topic, partition, prefix = "", -1, b""
    for i, event, subject in zip(count(0, NONCE_BYTES), events, subjects, strict=False):
        key, value = event["key"], event["value"]
        if subject is None or (key is None and value is None):
            append(event)
            continue
        if event["partition"] != partition or event["topic"] != topic:
            topic, partition = event["topic"], event["partition"]
            prefix = aad_prefix(topic, partition)
        nonce = nonces[i : i + NONCE_BYTES]
        if key is not None and value is not None:
            sealed = subject.cipher.encrypt(
                nonce, key + value, prefix + pack(event["offset"], event["timestamp_ms"], 0)
            )
            cut = len(key)
            key, value = sealed[:cut], sealed[cut:]
        else:  # one of the two is None: the other alone is sealed, its tag with it
            sealed = subject.cipher.encrypt(
                nonce, key or value or b"", prefix + pack(event["offset"], event["timestamp_ms"], _flags(key, value))
            )
            key, value = (None, sealed) if key is None else (sealed, None)
        sealed_event: SealedEvent = {
            "topic": topic,
            "partition": partition,
            "offset": event["offset"],
            "timestamp_ms": event["timestamp_ms"],
            "key": key,
            "value": value,
            "seal": subject.key_id + nonce,
        }
        append(sealed_event)
    return out


def key_id_of(seal: bytes) -> bytes:
    """The id of the key that sealed a record, from its ``seal`` field."""
    return seal[:KEY_ID_BYTES]


def open_sealed(event: LoggedEvent, seal: bytes, subject: SubjectKey) -> LoggedEvent:
    """The plaintext of a sealed record (its ``seal`` field passed apart).

    Raises ``MalformedSealError`` for a seal of the wrong shape or another key's id, and
    ``TamperedRecordError`` when authentication fails."""
    where = f"{event['topic']}[{event['partition']}]@{event['offset']}"
    if len(seal) != SEAL_BYTES or key_id_of(seal) != subject.key_id:
        msg = f"record {where} has a seal of {len(seal)} bytes or was sealed by another key"
        raise MalformedSealError(msg)
    key, value = event["key"], event["value"]
    if len(key or b"") + len(value or b"") < TAG_BYTES:
        msg = f"record {where} has no room for a tag"
        raise MalformedSealError(msg)
    aad = aad_prefix(event["topic"], event["partition"]) + _AAD_TAIL.pack(
        event["offset"], event["timestamp_ms"], _flags(key, value)
    )
    try:
        plain = subject.cipher.decrypt(seal[KEY_ID_BYTES:], (key or b"") + (value or b""), aad)
    except InvalidTag as exc:
        msg = f"record {where} does not open under its key"
        raise TamperedRecordError(msg) from exc
    if key is not None and value is not None:
        key, value = plain[: len(key)], plain[len(key) :]
    elif value is None:
        key = plain
    else:
        value = plain
    return {
        "topic": event["topic"],
        "partition": event["partition"],
        "offset": event["offset"],
        "timestamp_ms": event["timestamp_ms"],
        "key": key,
        "value": value,
    }
