"""Memory agent: engram.memory → the event log, the derived stores and the view, then the facts.

Each batch of MemoryEvents is decoded once (`streams.edge.Admission`; what cannot be decoded is
dead-lettered with stage "sink", not retried forever and not dropped) and commits in the one
order (streams/commit.py): archived in the event log, applied by every store (vectors, graph) and
then by the in-process observers (the compile path's view), so the view is never ahead of the
graph that System 2 reads. The facts step (streams/steps.py) reads the same decoded events, in
offset order per user, and its decisions are delivered before its table is written. The part of
the batch every worker's view needs (processors/sharing.py) is delivered to the replica topic with
them, as received: the owner of a partition is the only one who replicates it. The dream step
(streams/dream_step.py) reads the batch with the facts step's decisions in place (``with_upstream``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engram.processors.sharing import needed_everywhere
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import MemoryEvent
from engram.streams.agents.ingest import KeyedSteps
from engram.streams.commit import Batch, CommitTargets, Output, commit_batch
from engram.streams.dream_step import UPSTREAM
from engram.streams.edge import Admission, Admitted


@dataclass(frozen=True, slots=True)
class Replica:
    """Where the shared part of engram.memory goes (``topic``), and the code topic its rule needs."""

    topic: str
    code_topic: str

    def outputs(self, admitted: Admitted[MemoryEvent]) -> list[Output]:
        shared = [r for r in admitted.accepted if needed_everywhere(r.value, self.code_topic)]
        return [Output(self.topic, raw.key, raw.value) for raw in admitted.raw_of(shared) if raw.value is not None]


@dataclass(frozen=True)
class MemoryApplier:
    admission: Admission[MemoryEvent]
    facts: KeyedSteps | None
    replica: Replica | None = None
    dreams: KeyedSteps | None = None

    async def stage(self, records: Sequence[RawRecord]) -> Batch:
        admitted = self.admission.admit(records)
        batch = Batch(archive=list(records), stored=admitted.accepted, outputs=list(admitted.dead))
        if self.replica is not None:
            batch.outputs.extend(self.replica.outputs(admitted))
        decided = await self.facts.run(admitted, admitted.accepted, batch) if self.facts is not None else []
        if self.dreams is not None:
            await self.dreams.run(admitted, with_upstream(admitted.accepted, decided), batch)
        return batch

    async def apply(self, records: Sequence[RawRecord], targets: CommitTargets) -> None:
        await commit_batch(await self.stage(records), targets)


def with_upstream(records: Sequence[Record[MemoryEvent]], derived: Sequence[MemoryEvent]) -> list[Record[MemoryEvent]]:
    """The batch with the facts step's decisions placed right after the record they derive from
    (the turn or request they cite), as ``UPSTREAM`` records: the dream step then reads each turn's
    facts where engram.memory will hold them, not a batch later (they reach the topic only after this
    batch), and skips them when they come back. A decision citing nothing goes last."""
    after: dict[tuple[str, int, int], list[MemoryEvent]] = {}
    for event in derived:
        source = event["sources"][0] if event["sources"] else None
        key = (source["topic"], source["partition"], source["offset"]) if source else ("", -1, -1)
        after.setdefault(key, []).append(event)
    last: dict[tuple[str, int, int], int] = {}
    for position, record in enumerate(records):
        for source in record.value["sources"][:1]:
            last[(source["topic"], source["partition"], source["offset"])] = position
    placed: dict[int, list[MemoryEvent]] = {}
    for key, events in after.items():
        placed.setdefault(last.get(key, len(records) - 1), []).extend(events)
    out: list[Record[MemoryEvent]] = []
    for position, record in enumerate(records):
        out.append(record)
        out.extend(
            Record(UPSTREAM, record.partition, record.offset, record.timestamp_ms, record.key, event)
            for event in placed.get(position, [])
        )
    return out
