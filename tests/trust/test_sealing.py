"""Sealing a logged record: what opens, what is refused, and that nothing of the plaintext shows."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.trust.sealing import (
    KEY_ID_BYTES,
    NONCE_BYTES,
    SEAL_BYTES,
    MalformedSealError,
    SubjectKey,
    TamperedRecordError,
    key_id_of,
    open_sealed,
    seal_batch,
    seal_event,
)
from engram.schemas.records import LoggedEvent

ADA = SubjectKey(b"a" * KEY_ID_BYTES, bytes(range(32)))
BOB = SubjectKey(b"b" * KEY_ID_BYTES, bytes(range(32, 64)))
NONCE = b"n" * NONCE_BYTES


def record(key: bytes | None = b"user-ada", value: bytes | None = b"MARKER the deploy failed", offset: int = 7
           ) -> LoggedEvent:  # fmt: skip
    return {
        "topic": "engram.turns",
        "partition": 2,
        "offset": offset,
        "timestamp_ms": 1_000,
        "key": key,
        "value": value,
    }


def split(sealed: LoggedEvent) -> tuple[LoggedEvent, bytes]:
    """A stored record and its seal, as the reader takes them apart."""
    stored: dict[str, Any] = dict(sealed)
    seal = stored.pop("seal")
    assert isinstance(seal, bytes) and len(seal) == SEAL_BYTES
    return cast(LoggedEvent, stored), seal


def opened(sealed: LoggedEvent, subject: SubjectKey = ADA) -> LoggedEvent:
    return open_sealed(*split(sealed), subject)


@pytest.mark.parametrize(
    ("key", "value"),
    [(b"user-ada", b"MARKER the deploy failed"), (b"user-ada", None), (None, b"MARKER"), (b"", b""), (b"u", b"")],
)
def test_a_sealed_record_opens_to_itself(key: bytes | None, value: bytes | None) -> None:
    plain = record(key, value)
    sealed = seal_event(plain, ADA, NONCE)
    assert key_id_of(split(sealed)[1]) == ADA.key_id
    assert (sealed["key"] is None, sealed["value"] is None) == (key is None, value is None)  # a tombstone stays one
    assert opened(sealed) == plain


def test_nothing_of_the_plaintext_is_stored() -> None:
    sealed = seal_event(record(), ADA, NONCE)
    stored = repr(sealed).encode()
    assert b"MARKER" not in stored and b"user-ada" not in stored
    assert (sealed["topic"], sealed["partition"], sealed["offset"], sealed["timestamp_ms"]) == (
        "engram.turns",
        2,
        7,
        1000,
    )


def moved(sealed: LoggedEvent, **changes: Any) -> LoggedEvent:
    return cast(LoggedEvent, {**sealed, **changes})


@pytest.mark.parametrize(
    "changes",
    [
        {"offset": 8},  # moved to another record
        {"partition": 3},
        {"topic": "engram.requests"},
        {"timestamp_ms": 5},  # moved in time
    ],
)
def test_a_ciphertext_moved_to_other_coordinates_does_not_open(changes: dict[str, Any]) -> None:
    sealed = seal_event(record(), ADA, NONCE)
    with pytest.raises(TamperedRecordError, match="does not open"):
        opened(moved(sealed, **changes))


def test_altered_bytes_or_a_forged_tombstone_do_not_open() -> None:
    sealed = seal_event(record(), ADA, NONCE)
    value = sealed["value"]
    assert value is not None
    flipped = bytes([value[0] ^ 1]) + value[1:]
    for forged in (moved(sealed, value=flipped), moved(sealed, key=None, value=(sealed["key"] or b"") + value)):
        with pytest.raises(TamperedRecordError):
            opened(forged)


def test_another_subjects_key_is_refused() -> None:
    sealed = seal_event(record(), ADA, NONCE)
    with pytest.raises(MalformedSealError, match="another key"):
        opened(sealed, BOB)
    # Even with the right id, a wrong key fails authentication.
    impostor = SubjectKey(ADA.key_id, BOB.key)
    with pytest.raises(TamperedRecordError):
        opened(sealed, impostor)


def test_a_batch_seals_only_records_with_a_subject_each_with_its_own_nonce() -> None:
    plain = [record(b"user-ada", b"MARKER", 1), record(b"repo", b"code", 2), record(b"user-bob", b"MARKER", 3)]
    drawn: list[int] = []

    def entropy(n: int) -> bytes:
        drawn.append(n)
        return bytes(range(n))

    sealed = seal_batch(plain, [ADA, None, BOB], entropy)
    assert drawn == [3 * NONCE_BYTES]  # one draw for the batch
    assert sealed[1] is plain[1]
    assert split(sealed[0])[1][KEY_ID_BYTES:] != split(sealed[2])[1][KEY_ID_BYTES:]
    assert opened(sealed[0]) == plain[0] and opened(sealed[2], BOB) == plain[2]
    with pytest.raises(MalformedSealError):
        seal_batch(plain, [ADA], entropy)


def test_a_record_with_neither_key_nor_value_is_left_as_it_is() -> None:
    plain = record(None, None)
    assert seal_batch([plain], [ADA]) == [plain]


def test_subject_keys_round_trip_and_refuse_wrong_sizes() -> None:
    key = SubjectKey.generate()
    again = SubjectKey.from_bytes(key.to_bytes())
    assert (again.key_id, again.key) == (key.key_id, key.key)
    assert "key=" not in repr(key)  # the key stays out of logs
    with pytest.raises(MalformedSealError):
        SubjectKey.from_bytes(b"short")
    with pytest.raises(MalformedSealError):
        SubjectKey(b"id", bytes(32))


@settings(max_examples=60, deadline=None)
@given(
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=300),
    offset=st.integers(0, 2**62),
)
def test_every_record_round_trips(key: bytes | None, value: bytes | None, offset: int) -> None:
    plain = record(key, value, offset)
    (sealed,) = seal_batch([plain], [ADA])
    if key is None and value is None:
        assert sealed == plain
    else:
        assert opened(sealed) == plain
