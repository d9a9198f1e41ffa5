"""Archive agent: the Engram topics no other agent archives → the immutable event log.

The ingest agents archive the inputs they accept, the memory agent engram.memory and the compile
agent the requests, each as step 1 of its commit (streams/commit.py), so every message is read and
decoded once per worker. This agent keeps the rest, the records Engram writes for others to read:
compiled contexts and dead letters. It decodes nothing: the log keeps them as produced.
"""

from __future__ import annotations

from collections.abc import Sequence

from engram.schemas.record import RawRecord
from engram.streams.commit import Batch, CommitTargets, commit_batch


async def archive(records: Sequence[RawRecord], targets: CommitTargets) -> None:
    """Make a batch durable in the event log (commit order step 1, the only one it has)."""
    await commit_batch(Batch(archive=list(records)), targets)
