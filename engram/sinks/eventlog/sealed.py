"""Sealed records in the event log: which are sealed (a policy), and sealing and opening them with
the key store (``keys``). The cipher and the record format are in processors/trust/sealing.py.

The sink seals a batch after it has dropped redelivered records and before it writes the block,
so a redelivery creates no key; the reader opens each record it yields, and skips (counting) those
whose key is erased. A record written without sealing (an older segment, or a topic the policy
leaves alone) reads as it was written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from engram.processors.trust.sealing import Entropy, SealError, SubjectKey, key_id_of, open_sealed, seal_batch
from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog.keys import KeyStore
from engram.sinks.eventlog.layout import EventLogCorruptError, EventLogError

SubjectOf = Callable[[str, bytes | None], str | None]
"""``(topic, raw key) -> subject``: whose record it is, or None to keep it in the clear."""

Pair = tuple[str, bytes | None]


class SealedRecordError(EventLogError):
    """A sealed record met by a reader that was given no key store."""


@dataclass(frozen=True)
class SealingPolicy:
    """Seal each record whose ``subject_of`` is not None with that subject's key from ``keys``."""

    subject_of: SubjectOf
    keys: KeyStore
    entropy: Entropy = os.urandom

    def seal(self, events: Sequence[LoggedEvent]) -> list[LoggedEvent]:
        """The batch as it is to be stored. The subject of each distinct (topic, key) is asked
        once, and the keys created for the batch are made durable together."""
        if not events:
            return []
        self.keys.refresh()  # a subject forgotten by another process gets a new key, not the erased one
        topics = {event["topic"] for event in events}
        if len(topics) == 1:  # the sink's case (a batch is one partition): the key alone tells
            (topic,) = topics
            raw_keys = [event["key"] for event in events]
            by_key = {raw: key for (_, raw), key in self._keys_of({(topic, raw) for raw in raw_keys}).items()}
            return seal_batch(events, [by_key[raw] for raw in raw_keys], self.entropy)
        pairs: list[Pair] = [(event["topic"], event["key"]) for event in events]
        by_pair = self._keys_of(set(pairs))
        return seal_batch(events, [by_pair[pair] for pair in pairs], self.entropy)

    def _keys_of(self, pairs: set[Pair]) -> dict[Pair, SubjectKey | None]:
        subjects = {pair: self.subject_of(*pair) for pair in pairs}
        keys = self.keys.subject_keys({subject for subject in subjects.values() if subject is not None})
        return {pair: None if subject is None else keys[subject] for pair, subject in subjects.items()}


def open_stored(stored: dict[str, Any], keys: KeyStore | None) -> LoggedEvent | None:
    """A record as read from a segment, as the LoggedEvent it was before it was stored; None when
    it is sealed by an erased key. ``stored`` loses its ``seal`` field (it is the reader's own)."""
    seal = stored.pop("seal", None)
    event = cast(LoggedEvent, stored)
    if seal is None:
        return event
    where = f"{event['topic']}[{event['partition']}]@{event['offset']}"
    if keys is None:
        msg = f"record {where} is sealed; read the log with its key store"
        raise SealedRecordError(msg)
    key = keys.key_by_id(key_id_of(seal))
    if key is None:
        return None
    try:
        return open_sealed(event, seal, key)
    except SealError as exc:
        msg = f"sealed record {where} does not open: {exc}"
        raise EventLogCorruptError(msg) from exc
