"""Start a worker's input partitions without dropping records: fixes for Faust recovery races.

Measured here (tests/e2e/test_trace_e2e.py, a worker SIGKILLed and restarted over a backlog, with
fetch and delivery logged): at the end of a table recovery, Faust 0.15.3
(``Recovery.on_recovery_completed``, and ``_resume_streams`` for an app without tables)

1. makes the input partitions active while the flow is already running (table recovery resumed
   it), so records start flowing into the agents' queues;
2. seeks them to the committed offsets, which resets the read offset that the delivery loop
   then moves on past the records it is delivering; and
3. calls ``flow_control.resume()``, which *clears every agent queue*.

Records sitting in a queue at step 3 were never handed to an agent, and their redelivery after
the seek is filtered out as already read, so the restarted worker silently skipped them (7 of 31
restarts here, 2-26 records of each input partition). A client race, not the broker's: the same
order runs against any Kafka.

`ClearFirstRecovery` clears the queues first, while no input record can be in one, then makes the
inputs active, then seeks. The seek must come after the activation: while the inputs are inactive,
a fetch asked for no partition returns theirs too and Faust drops them with the fetch position
already past them (measured: a restarted worker never answered two requests); the seek rewinds
the position over them.

**A restarted worker that received nothing** (tests/e2e/test_unfinished_e2e.py, about 1 run in
15: "ready", then silent until a further restart). The same drop, measured with every fetch
logged in the worker. Table recovery starts Faust's fetcher while only the changelog partitions
are active; when recovery ends they are paused, and until the inputs are activated Faust's set of
active partitions is empty. Faust passes that very set object to the consumer thread, and
aiokafka's ``fetched_records(partitions)`` reads an empty set as *every* partition: a fetch that
ran in that moment returned all that aiokafka had buffered (``turns[1]`` 0-59, ``memory[1]``
0-288), Faust dropped it as inactive, and aiokafka's positions stayed at the end. The seek to the
committed offsets moved nothing, because aiokafka's ``seek_to_committed`` only seeks a committed
offset above 0 and the first worker had exited before its first commit. With that moment widened
to 1.5 s in the worker, 5 of 8 runs stalled, each after such a drop.

So `rewind_uncommitted` follows the committed-offset seek: every input partition without a
committed offset (or with 0) is sought to its earliest offset, where the group starts a partition
it never committed (Engram's ``consumer_auto_offset_reset``). Each input then resumes where the
group's commits say, whatever was dropped while it was inactive (widened moment: 8 of 8 runs
passed, the drop re-read in 4; unwidened: 22 of 22). What a delivery already in flight then
filters out was delivered before; anything else `streams/repairs/gaps.py` reads back.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from faust.tables import TableManager
from faust.tables.recovery import Recovery
from faust.types import TP, ConsumerT

from engram.streams.repairs.ends import fetched_ends
from engram.streams.tablestore import DiskTableStore

logger = logging.getLogger(__name__)


class ClearFirstRecovery(Recovery):
    """Faust's recovery with the end-of-recovery steps in a safe order (see module docstring).

    Both ways a recovery ends are overridden: `on_recovery_completed` (the app has tables) and
    `_resume_streams` (it has none). Each is Faust 0.15.3's body with `_start_inputs` in place of
    its resume-seek-clear sequence.
    """

    async def on_recovery_completed(self, generation_id: int = 0) -> None:
        app: Any = self.app
        self.log.info("Restore complete!")
        await app.on_rebalance_complete.send()
        self._set_recovery_ended()
        callbacks = [
            asyncio.ensure_future(
                table.on_recovery_completed(self.actives_for_table[table], self.standbys_for_table[table])
            )
            for table in self.tables.values()
        ]
        if callbacks:
            await asyncio.wait(callbacks)
        if app.consumer_generation_id != generation_id:
            self.log.warning(
                "Recovery rebalancing again (generation %s, not %s)", app.consumer_generation_id, generation_id
            )
            return
        await self._start_inputs()
        self.tables.on_actives_ready()
        if not app.assignor.assigned_standbys():
            self.tables.on_standbys_ready()
        app.on_rebalance_end()
        self.log.info("Worker ready")

    async def _build_offsets(self, consumer: ConsumerT, tps: set[TP], destination: Any, title: str) -> None:
        """Faust's start offsets, where a table store on disk ahead of the broker's changelog (a
        broker that lost its data, a topic made anew) is reset and read from the changelog's
        start, instead of Faust's ``ConsistencyError`` stopping the worker: the broker holds the
        truth (streams/tablestore.py)."""
        await super()._build_offsets(consumer, tps, destination, title)
        stored = {tp: destination[tp] for tp in tps if destination[tp] is not None and destination[tp] >= 0}
        if not stored:
            return
        ends: Counter[TP] = self.active_highwaters if title == "active" else Counter()
        if not all(tp in ends for tp in stored):  # the actives' ends are built just before this
            ends = Counter()
            await self._build_highwaters(consumer, set(stored), ends, f"{title} stores")
        for tp, offset in stored.items():
            table: Any = self.tp_to_table[tp]  # a Table: CollectionT does not declare its store
            store = table.data
            if offset > ends[tp] and isinstance(store, DiskTableStore):
                self.log.warning("Table store of %s is at %s, past the changelog's end %s: reset", tp, offset, ends[tp])
                store.reset_partition(tp.partition)
                destination[tp] = -1

    async def _resume_streams(self, generation_id: int = 0) -> None:
        app: Any = self.app
        await app.on_rebalance_complete.send()
        if app.consumer_generation_id != generation_id:
            self.log.warning("Recovery rebalancing again")
            return
        await self._start_inputs()
        self.tables.on_actives_ready()
        self.tables.on_standbys_ready()
        app.on_rebalance_end()
        self.log.info("Worker ready")

    async def _start_inputs(self) -> None:
        """Clear the agents' queues while no input record can be in one, make the inputs active,
        then seek them: to the committed offsets, and those never committed to the group's start.
        The seek also re-reads anything the fetcher dropped while they were inactive, and nothing
        delivered after it can be cleared."""
        app: Any = self.app
        consumer = app.consumer
        assignment = consumer.assignment()
        inputs = {tp for tp in assignment if not self._is_changelog_tp(tp)}
        app.flow_control.resume()  # clears the agents' queues: none holds an input record yet
        consumer.resume_flow()
        consumer.resume_partitions(inputs)
        if assignment:
            self.log.info("Seek stream partitions to committed offsets.")
            await self._wait(consumer.perform_seek(), timeout=app.conf.broker_request_timeout)
            rewinding = rewind_uncommitted(consumer, inputs, app.conf.consumer_auto_offset_reset)
            await self._wait(rewinding, timeout=app.conf.broker_request_timeout)
        self.completed.set()
        await app._fetcher.maybe_start()


def uncommitted(inputs: Iterable[TP], committed: Mapping[TP, int | None]) -> list[TP]:
    """The input partitions a seek to the committed offsets leaves wherever the fetcher was: those
    the group never committed (None) or committed at 0 (aiokafka's ``seek_to_committed`` seeks
    only offsets above 0). Sorted, for a stable log line."""
    return sorted((tp for tp in inputs if not committed.get(tp)), key=lambda tp: (tp.topic, tp.partition))


async def rewind_uncommitted(consumer: Any, inputs: Iterable[TP], offset_reset: str) -> list[TP]:
    """After Faust's ``perform_seek`` (which records each partition's committed offset as its read
    offset): seek the `uncommitted` inputs to their earliest offset, where the group starts a
    partition it never committed. Returns them. With ``latest`` a partition without a commit starts
    at its end anyway, so nothing is sought."""
    rewind = uncommitted(inputs, consumer._read_offset)
    if not rewind or offset_reset != "earliest":
        return []
    starts: Mapping[TP, int] = await consumer.earliest_offsets(*rewind)
    await consumer.seek_wait({tp: starts[tp] for tp in rewind})
    logger.info(
        "Seek input partitions without a committed offset to their earliest offsets: %s",
        ", ".join(f"{tp.topic}[{tp.partition}]={starts[tp]}" for tp in rewind),
    )
    return rewind


class FetchedEndsRecovery(ClearFirstRecovery):
    """`ClearFirstRecovery` reading each changelog to its end as a fetch finds it
    (streams/repairs/ends.py), for a broker whose ``ListOffsets`` end is wrong (the stand-in's profile):
    Faust's own end stopped the recovery inside the changelog's last batch."""

    async def _build_highwaters(self, consumer: ConsumerT, tps: set[TP], destination: Any, title: str) -> None:
        await super()._build_highwaters(consumer, tps, destination, title)
        if not tps:
            return
        reported = {(tp.topic, tp.partition): destination[tp] + 1 for tp in tps}  # Faust keeps end - 1
        ends = await asyncio.to_thread(fetched_ends, bootstrap_of(self.app), reported)
        for (topic, partition), end in ends.items():  # a Counter: update() would add
            destination[TP(topic, partition)] = end - 1
        self.log.info("Changelog ends (%s) as fetched: %s", title, sorted(ends.items()))


def bootstrap_of(app: Any) -> str:
    """The app's broker addresses as librdkafka takes them (``host:port,...``)."""
    return ",".join(f"{url.host}:{url.port}" for url in app.conf.broker)


class ClearFirstTables(TableManager):
    """Faust's table manager, recovering with `ClearFirstRecovery`. Set as the app's
    ``TableManager`` setting (streams/app.py: faust_settings)."""

    recovery_class: type[ClearFirstRecovery] = ClearFirstRecovery

    @property
    def recovery(self) -> Recovery:
        if self._recovery is None:
            self._recovery = self.recovery_class(self.app, self, beacon=self.beacon, loop=self.loop)
        return self._recovery


class FetchedEndsTables(ClearFirstTables):
    """`ClearFirstTables` recovering with `FetchedEndsRecovery` (the stand-in broker's profile)."""

    recovery_class = FetchedEndsRecovery
