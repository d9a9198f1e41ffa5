"""Erasure agent: engram.erasures → the user forgotten everywhere (issue 17, `engram forget`).

For each admitted request whose producer may write into the user's instance (a token gate's
`Gate.check_write`; the user, or a ``writer_of user:…`` tuple), one batch commits, in the one order
(streams/commit.py):
1. the request into the event log (sealed with the user's key, like everything of the user);
2. a `SubjectErased` MemoryEvent on engram.memory, keyed by the user: the memory agent's sinks
   (Qdrant, the graph), the facts and dreaming steps, and every worker's view, graph engine and
   SLB apply it in order with the rest of the user's memory (processors/trust/erasure.py says what
   goes); it is replicated to every worker, as removals are;
3. the user's Trace state deleted, every part and then its head (the erasure topic is keyed and
   partitioned like the turns).
Then the user's event-log key is deleted (sinks/eventlog/keys.py): the log's sealed records of the
user, this request included, can no longer be read, so a replay rebuilds the stores without them.
What the user writes after this is sealed with a new key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from engram.processors.trace.records import erased
from engram.schemas.events import memory_event
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import SUBJECT_ERASED, ErasureRequested, MemoryEvent, SubjectErased
from engram.sinks.eventlog import KeyStore, erase_subject
from engram.streams.agents.ingest import MemoryOutputs, WriteCheck
from engram.streams.commit import Batch, CommitTargets, StateTable, TableWrite, commit_batch
from engram.streams.edge import Admission
from engram.streams.metrics import EngramMetrics


def subject_erased(record: Record[ErasureRequested]) -> MemoryEvent:
    """The MemoryEvent of one erasure request (its id from the request's offset)."""
    request = record.value
    change: SubjectErased = {
        "user_id": request["user_id"], "reason": request["reason"], "requested_by": request["requested_by"],
    }  # fmt: skip
    return memory_event(request["user_id"], request["event_time_ms"], [record.ref], SUBJECT_ERASED, change)


@dataclass(frozen=True)
class Eraser:
    admission: Admission[ErasureRequested]
    outputs: MemoryOutputs
    trace_state: StateTable
    metrics: EngramMetrics
    writes: WriteCheck | None = None  # a token gate's check (None: an open worker)
    keys: KeyStore | None = None  # the event log's key store (None: the log is not sealed)

    async def erase(self, records: Sequence[RawRecord], targets: CommitTargets) -> None:
        admitted = self.admission.admit(records)
        if self.writes is not None:
            await self.writes(self.admission, admitted)
        accepted = admitted.accepted
        batch = Batch(archive=admitted.raw_of(accepted), outputs=list(admitted.dead))
        batch.outputs.extend(self.outputs([subject_erased(r) for r in accepted]))
        for r in accepted:  # every part of the user's Trace state, its head last (processors/trace/records.py)
            keys = erased(r.value["user_id"], self.trace_state)
            batch.writes.extend(TableWrite(self.trace_state, r.partition, key, None) for key in keys)
        await commit_batch(batch, targets)
        for record in accepted:
            if self.keys is not None:
                await asyncio.to_thread(erase_subject, self.keys, record.value["user_id"])
            self.metrics.erasures.inc()
