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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer

from processors.intake import Accepted, admit
from processors.trust.relations import Relationship, Relationships
from schemas.codec import AvroCodec
from schemas.record import RawRecord
from schemas.records import RelationshipChanged
from streams.assigned import AssignedReader, available
from streams.commit import Batch, CommitTargets, commit_batch
from streams.config import EngramConfig
from streams.edge import Admission, record_of_message
from streams.follow import TaskRunner, follower_settings
from streams.metrics import EngramMetrics

logger = logging.getLogger(__name__)


async def admit_relationships(
    records: Sequence[RawRecord], admission: Admission[RelationshipChanged], targets: CommitTargets
) -> None:
    """Archive the valid changes, dead-letter the others (commit order steps 1 and 3)."""
    admitted = admission.admit(records)
    await commit_batch(Batch(archive=admitted.raw_of(admitted.accepted), outputs=admitted.dead), targets)


@dataclass
class RelationshipFollower(AssignedReader[list[RelationshipChanged]]):
    codec: AvroCodec[RelationshipChanged] = field(default_factory=lambda: AvroCodec("RelationshipChanged"))

    thread_name = "engram-relationships"
    stopped_message = "relationship follower stopped; relationship changes wait for a restart"

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return {**super().consumer_settings(), "auto.offset.reset": "earliest"}

    def fetch(self, consumer: Consumer) -> list[RelationshipChanged] | None:
        changes = []
        for message in available(consumer):
            verdict = admit(self.codec, "RelationshipChanged", record_of_message(message).value)
            if isinstance(verdict, Accepted):
                changes.append(verdict.record)
        return changes or None


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
    app: TaskRunner, config: EngramConfig, relationships: Relationships, metrics: EngramMetrics
) -> None:
    """Follow every partition of engram.relationships from the beginning while the worker runs."""
    topic = config.topics.relationships
    follower = RelationshipFollower(
        config.bootstrap_servers, topic, f"{config.app_id}-relationships", follower_settings(config)
    )

    async def follow() -> None:
        loop = asyncio.get_running_loop()

        def deliver(changes: list[RelationshipChanged]) -> None:  # on the follower's thread
            try:
                loop.call_soon_threadsafe(apply_changes, relationships, changes, metrics, topic)
            except RuntimeError:  # the loop closed: the worker is stopping
                return

        follower.start(deliver)
        follower.assign_from(dict.fromkeys(range(config.partitions), OFFSET_BEGINNING))
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.to_thread(follower.stop)

    app.task(follow)
