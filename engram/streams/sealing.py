"""Which event-log records a worker seals, and the key store its sinks and readers share.

Erasure (ARCHITECTURE.md): user-scoped records are sealed with a key per subject
(processors/trust/sealing.py, sinks/eventlog/keys.py); forgetting a subject deletes its key, and a
replay of the log then rebuilds the stores without its records.

The subject of a record is its Kafka key as UTF-8 text (bytes that are not UTF-8 are kept apart by
surrogate escapes). Every archived topic is sealed but two: code changes (keyed by repository) and
relationship tuples (grants, not anyone's content) stay in the clear, as does a record without a
key. So the topics keyed by user are sealed: turns, context requests, compiled contexts, graph
requests and answers, engram.memory, and any added later (sealing is the default, not a list to
keep up). Dead letters are keyed by the rejected record's key and carry its bytes, so they are
sealed the same way. engram.memory events derived from code are keyed by repository, so they are
sealed under a per-repository subject: forgetting the repository's name erases them (and the dead
letters of code changes).
"""

from __future__ import annotations

from engram.sinks.eventlog import EventLogReader, KeyStore, SealingPolicy, SubjectOf
from engram.streams.config import EngramConfig, TopicNames


def clear_topics(topics: TopicNames) -> frozenset[str]:
    """The archived topics whose records are never sealed."""
    return frozenset({topics.code, topics.relationships})


def subject_policy(topics: TopicNames) -> SubjectOf:
    """``(topic, key) -> subject``: the key as text, except on the clear topics or without a key."""
    clear = clear_topics(topics)

    def subject_of(topic: str, key: bytes | None) -> str | None:
        if not key or topic in clear:
            return None
        return key.decode("utf-8", "surrogateescape")

    return subject_of


def eventlog_sealing(config: EngramConfig) -> SealingPolicy | None:
    """The policy a worker's event-log sinks share (one key store per process), or None when
    ``seal_eventlog`` is off."""
    if not config.seal_eventlog:
        return None
    return SealingPolicy(subject_policy(config.topics), KeyStore(config.keys_dir))


def eventlog_reader(config: EngramConfig) -> EventLogReader:
    """A reader of the worker's event log that opens sealed records (and skips erased ones).

    The key store is used whenever its folder exists, whatever ``seal_eventlog`` says now: records
    sealed earlier stay sealed. Without the folder, a sealed record is an error, not "erased"."""
    keys = config.keys_dir
    return EventLogReader(config.eventlog_dir, KeyStore(keys) if keys.is_dir() else None)
