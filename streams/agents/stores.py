"""Memory agent: engram.memory → the event log, the derived stores and the view, then the facts.

Each batch of MemoryEvents is decoded once (`streams.edge.Admission`; what cannot be decoded is
dead-lettered with stage "sink", not retried forever and not dropped) and commits in the one
order (streams/commit.py): archived in the event log, applied by every store (vectors, graph) and
then by the in-process observers (the compile path's view), so the view is never ahead of the
graph that System 2 reads. The facts step (streams/steps.py) reads the same decoded events, in
offset order per user, and its decisions are delivered before its table is written. The part of
the batch every worker's view needs (processors/sharing.py) is delivered to the replica topic with
them, as received: the owner of a partition is the only one who replicates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from processors.sharing import needed_everywhere
from schemas.record import RawRecord
from schemas.records import MemoryEvent
from streams.agents.ingest import KeyedSteps
from streams.commit import Batch, CommitTargets, Output, commit_batch
from streams.edge import Admission, Admitted


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

    async def stage(self, records: Sequence[RawRecord]) -> Batch:
        admitted = self.admission.admit(records)
        batch = Batch(archive=list(records), stored=admitted.accepted, outputs=list(admitted.dead))
        if self.replica is not None:
            batch.outputs.extend(self.replica.outputs(admitted))
        if self.facts is not None:
            await self.facts.run(admitted, admitted.accepted, batch)
        return batch

    async def apply(self, records: Sequence[RawRecord], targets: CommitTargets) -> None:
        await commit_batch(await self.stage(records), targets)
