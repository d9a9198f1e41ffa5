"""Relationship tuples: engram.relationships → the event log, and every worker's `Gate`.

Two readers of the compacted topic, for two jobs:
- the relationships agent (a batch agent; each partition is one worker's) decodes and checks each
  change (`Relationship.check`: known relation, subject and object of the right kinds, instance
  names that cannot carry an injection), archives the valid ones and dead-letters the rest with
  the reason, once per group;
- every worker's `RelationshipFollower` reads every partition from the beginning (the compacted
  topic is the state) and applies the valid changes, in order, to its gate's `Relationships`, on
  the loop. A ``part_of`` change that would close a cycle is refused there (it depends on the
  state, which only the followers hold) and counted as a dead letter of reason ``invalid``; every
  worker refuses it alike.
A change reaches a worker's next request once its follower has read it: the revocation delay is
the follower's fetch latency (the stand-in profile's follower fetch wait, 100 ms or less).

`Loaded` says when the follower has first reached the end of every partition (the consumer's
partition-EOF events): until then a worker's tuples are incomplete, so ingest waits for it before
it checks a write (refusing a write for want of a tuple not yet read would dead-letter a valid
input), and the broker keeps the backlog meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError

from engram.processors.intake import Accepted, admit
from engram.processors.trust.relations import Relationship, Relationships
from engram.schemas.codec import AvroCodec
from engram.schemas.record import RawRecord
from engram.schemas.records import RelationshipChanged
from engram.streams.assigned import AssignedReader, polled
from engram.streams.commit import Batch, CommitTargets, commit_batch
from engram.streams.config import EngramConfig
from engram.streams.edge import Admission, record_of_message
from engram.streams.follow import TaskRunner, follower_settings
from engram.streams.metrics import EngramMetrics

logger = logging.getLogger(__name__)


async def admit_relationships(
    records: Sequence[RawRecord], admission: Admission[RelationshipChanged], targets: CommitTargets
) -> None:
    """Archive the valid changes, dead-letter the others (commit order steps 1 and 3)."""
    admitted = admission.admit(records)
    await commit_batch(Batch(archive=admitted.raw_of(admitted.accepted), outputs=admitted.dead), targets)


class Loaded:
    """Set once the worker's follower has read every partition of engram.relationships to its end."""

    WARN_EVERY_S = 10.0

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        while not self._event.is_set():
            try:
                await asyncio.wait_for(self._event.wait(), self.WARN_EVERY_S)
            except TimeoutError:
                logger.warning("ingest waits for the relationship tuples to load before it checks writes")


@dataclass(frozen=True, slots=True)
class FollowedBatch:
    changes: list[RelationshipChanged]
    at_end: bool  # every partition has been read to its end at least once


@dataclass
class RelationshipFollower(AssignedReader[FollowedBatch]):
    codec: AvroCodec[RelationshipChanged] = field(default_factory=lambda: AvroCodec("RelationshipChanged"))
    partitions: int = 1
    _ended: set[int] = field(default_factory=set)

    thread_name = "engram-relationships"
    stopped_message = "relationship follower stopped; relationship changes wait for a restart"

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return {**super().consumer_settings(), "auto.offset.reset": "earliest", "enable.partition.eof": True}

    def fetch(self, consumer: Consumer) -> FollowedBatch | None:
        changes = []
        ended_before = len(self._ended)
        for message in polled(consumer):
            error = message.error()
            if error is not None or message.value() is None:
                partition = message.partition()
                if error is not None and error.code() == KafkaError._PARTITION_EOF and partition is not None:
                    self._ended.add(partition)
                continue
            verdict = admit(self.codec, "RelationshipChanged", record_of_message(message).value)
            if isinstance(verdict, Accepted):
                changes.append(verdict.record)
        at_end = len(self._ended) >= self.partitions
        if not changes and (len(self._ended) == ended_before or not at_end):
            return None
        return FollowedBatch(changes, at_end)


def apply_changes(relationships: Relationships, changes: Sequence[RelationshipChanged], metrics: EngramMetrics,
                  topic: str) -> None:  # fmt: skip
    """Apply changes in order; a refused one is logged and counted, and the rest still apply."""
    for change in changes:
        tuple_ = Relationship(change["subject"], change["relation"], change["object"])
        try:
            if change["present"]:
                relationships.add(tuple_)
            else:
                relationships.remove(tuple_)
        except ValueError as exc:  # RelationError (a cycle, a wrong kind) or InstanceError (a bad name)
            metrics.deadletters.labels(topic, "invalid").inc()
            logger.warning("relationship change refused: %s", exc)


def register_relationship_follower(
    app: TaskRunner, config: EngramConfig, relationships: Relationships, metrics: EngramMetrics, loaded: Loaded
) -> None:
    """Follow every partition of engram.relationships from the beginning while the worker runs;
    ``loaded`` is set once the follower has read them all to their end."""
    topic = config.topics.relationships
    follower = RelationshipFollower(
        config.bootstrap_servers, topic, f"{config.app_id}-relationships", follower_settings(config),
        partitions=config.partitions,
    )  # fmt: skip

    async def follow() -> None:
        loop = asyncio.get_running_loop()

        def apply(batch: FollowedBatch) -> None:
            apply_changes(relationships, batch.changes, metrics, topic)
            if batch.at_end:
                loaded.set()

        def deliver(batch: FollowedBatch) -> None:  # on the follower's thread
            try:
                loop.call_soon_threadsafe(apply, batch)
            except RuntimeError:  # the loop closed: the worker is stopping
                return

        follower.start(deliver)
        follower.assign_from(dict.fromkeys(range(config.partitions), OFFSET_BEGINNING))
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.to_thread(follower.stop)

    app.task(follow)
