"""Archive agent: the Engram topics no other agent archives → the immutable event log.

The ingest agents archive their own accepted inputs and the memory agent archives engram.memory,
each as step 1 of its commit (streams/commit.py), so those are read and decoded once per worker.
This agent keeps the rest: compiled contexts, dead letters and context requests. Requests are
admitted first (decoded and validated): the log keeps only valid inputs, so a replay republishes
exactly what the pipeline accepted; a rejected request reaches the log as its dead letter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from processors.intake import Accepted, admit
from schemas.record import RawRecord
from streams.codecs import Codec
from streams.commit import Batch, CommitTargets, commit_batch


@dataclass(frozen=True)
class Archiver:
    """Says which records of a batch the event log keeps (commit order step 1)."""

    admitted: Mapping[str, tuple[Codec, str]]  # topic name -> (codec, schema name) of inputs to validate

    def stage(self, records: Sequence[RawRecord]) -> Batch:
        return Batch(archive=[r for r in records if self.keeps(r)])

    def keeps(self, record: RawRecord) -> bool:
        check = self.admitted.get(record.topic)
        return check is None or isinstance(admit(check[0], check[1], record.value), Accepted)

    async def archive(self, records: Sequence[RawRecord], targets: CommitTargets) -> None:
        await commit_batch(self.stage(records), targets)
