"""The dream step: engram.memory → event-time triggers → dreams → engram.memory.

It runs in the memory agent beside the facts step (streams/agents/stores.py) and reads the same
decoded events. Per partition, in offset order, it keeps the stream time and the pending triggers
(processors/dreaming/schedule.py); per user, the memory dreaming reads (processors/dreaming/
memory.py). Before a turn is applied, the dreams it makes due run on the memory as it was, so the
output depends on the partition's order alone and a replay dreams the same dreams. A dream's events
are applied to the user's memory at once and remembered until they come back through the topic,
where they are skipped: the echo of an event must not undo a later one.

A NodeReawakened from the compile path (a query that matched a dormant node) is folded, and the
step answers it with the NEXT edits that put the node back in its session's timeline. A
NodesAccessed (a compiled context's nodes) moves its episodes' last access, from which pruning ages
them; it is written only when it moves one (`_use`), not once per request.

State lives in the step's table: one record per user and one schedule per partition
(``SCHEDULE_PREFIX`` + partition), each written at its source partition. The step keeps the users'
memories it last wrote (`streams.held.HeldStates`): while the table still holds the very record object the
step wrote for a user, the next batch goes on from the memory in hand instead of parsing the record
again (which costs what the user's history weighs). Any other record (another worker wrote the user,
a batch was not committed, a restart) is parsed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from engram.processors.dreaming.dream import Dreamer, DreamInvariantError
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.records import erased, memory_records, read_memory
from engram.processors.dreaming.schedule import DreamSchedule, DueDream
from engram.processors.trace import EVENT_KIND
from engram.schemas.changes import change_as
from engram.schemas.record import Record
from engram.schemas.records import (
    FACT_ACCESSED,
    MemoryEvent,
    NodeReawakened,
    NodesAccessed,
    NodeUpserted,
    SubjectErased,
)
from engram.streams.agents.ingest import KeyedRecords, StateWrite
from engram.streams.commit import JsonState
from engram.streams.held import HeldStates

SCHEDULE_PREFIX: Final = "\x00dream-schedule/"
# The topic of a record another step of this batch derived (streams/agents/stores.py with_upstream):
# applied now, and skipped when it comes back through engram.memory.
UPSTREAM: Final = "\x00upstream"
# What dreaming never reads: a facts block's reads (one per compiled context) would otherwise
# rewrite the user's memory head and the partition's schedule per request.
UNREAD: Final = frozenset({FACT_ACCESSED})
logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Batch:
    """What one batch loaded and changed: users' memories, partitions' schedules, and for each a
    key of the batch on the same partition (a table write goes to its group's partition)."""

    states: Mapping[str, JsonState]
    dreamer: Dreamer
    cache: HeldStates[UserMemory]
    users: dict[str, UserMemory] = field(default_factory=dict)
    schedules: dict[int, DreamSchedule] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    events: list[MemoryEvent] = field(default_factory=list)
    erased: dict[str, list[str]] = field(default_factory=dict)  # an erased memory's part keys

    def memory(self, user: str) -> UserMemory:
        memory = self.users.get(user)
        if memory is None:
            data = self.states.get(user)
            memory = self.cache.take(user, data) or read_memory(user, self.states) or UserMemory.new(user)
            self.users[user] = memory
        return memory

    def schedule(self, partition: int) -> DreamSchedule:
        schedule = self.schedules.get(partition)
        if schedule is None:
            data = self.states.get(f"{SCHEDULE_PREFIX}{partition}")
            config = self.dreamer.config
            schedule = DreamSchedule.from_dict(data, config) if data else DreamSchedule(config)
            self.schedules[partition] = schedule
        return schedule

    def erase(self, user: str, partition: int) -> None:
        """Forget the user's memory (an empty one replaces it, its other parts are deleted) and its
        pending dreams."""
        memory = self.users[user] = UserMemory.new(user)
        memory.changed = True
        self.erased[user] = erased(user, self.states)
        self.groups.setdefault(user, user)
        self.schedule(partition).forget(user)
        self.groups.setdefault(f"{SCHEDULE_PREFIX}{partition}", user)

    def writes(self) -> list[StateWrite]:
        """Each changed memory's records (processors/dreaming/records.py), an erased memory's parts
        deleted, and every schedule seen."""
        out: list[StateWrite] = []
        for user, memory in self.users.items():
            record = self.states.get(user)
            if memory.changed:
                parts = memory_records(memory)
                kept = {key for key, _ in parts}
                gone = [key for key in self.erased.get(user, ()) if key not in kept]
                out.extend(StateWrite(self.groups[user], key, part) for key, part in parts)
                out.extend(StateWrite(self.groups[user], key, None) for key in gone)  # after the new head
                record = next(part for key, part in parts if key == user)
            if record is not None:
                memory.changed = False
                self.cache.put(user, record, memory)
        for partition, schedule in self.schedules.items():
            key = f"{SCHEDULE_PREFIX}{partition}"
            out.append(StateWrite(self.groups[key], key, schedule.to_dict()))
        return out


@dataclass
class DreamStep:
    """The memory agent's dreaming: see the module docstring."""

    dreamer: Dreamer = field(default_factory=Dreamer)
    name: str = "dream"
    on_failure: Callable[[], None] = field(default=lambda: None)  # a dream skipped (a metric counts it)
    cache: HeldStates[UserMemory] = field(default_factory=HeldStates)

    def key_of(self, record: Record[MemoryEvent]) -> str:
        return record.value["key"]

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        batch = _Batch(states, self.dreamer, self.cache)
        records = sorted((r for rs in groups.values() for r in rs), key=lambda r: (r.partition, r.offset))
        for record in records:
            self._record(batch, record)
        return batch.writes(), batch.events

    def _dream(self, batch: _Batch, due: DueDream) -> None:
        memory = batch.memory(due.user_id)
        if not memory.first_dream(due):
            return  # dreamt before a restart; the schedule's record had not been written
        try:
            batch.events.extend(self.dreamer.dream(memory, due))
        except DreamInvariantError:
            # A bug, not bad input: the input goes on being processed; this dream is skipped whole
            # (the memory is unchanged) and the next trigger tries again.
            logger.exception("dream of %s at %d skipped", due.user_id, due.at_ms)
            self.on_failure()

    def _use(self, batch: _Batch, event: MemoryEvent, accessed: NodesAccessed) -> None:
        """A compiled context's nodes: folded into the user's memory when they move an episode's
        last access, else nothing changes and nothing is written. The fold is a max, so a read
        applied twice changes nothing: no offset is kept for it (a batch read again after a crash
        applies it harmlessly), and the partition's schedule, which only turns advance, is not read."""
        user = event["key"]
        if user not in batch.users and user not in batch.states:
            return
        memory = batch.memory(user)
        if memory.graph.use(accessed["node_ids"], event["event_time_ms"]):
            memory.changed = True
            batch.groups.setdefault(user, user)

    def _record(self, batch: _Batch, record: Record[MemoryEvent]) -> None:
        event = record.value
        user = event["key"]
        if change_as(event, SubjectErased) is not None:
            batch.erase(user, record.partition)
            return
        if event["change"][0] in UNREAD:
            return
        if (accessed := change_as(event, NodesAccessed)) is not None:
            self._use(batch, event, accessed)
            return
        node = change_as(event, NodeUpserted)
        turn = node is not None and node["kind"] == EVENT_KIND and node["session_id"] is not None
        if not turn and user not in batch.users and user not in batch.states:
            return  # not a user's memory (a repo's code graph), or nothing dreaming reads yet
        # A batch comes again after a crash between its state writes and its offset commit; the
        # schedule's record and each user's are written apart, so each skips what it holds already.
        fresh = record.topic == UPSTREAM  # decided in this batch, never applied before
        schedule = batch.schedule(record.partition)
        batch.groups.setdefault(f"{SCHEDULE_PREFIX}{record.partition}", user)
        scheduled = turn and (fresh or schedule.first_time(record.offset))
        if scheduled:
            for due in schedule.advance(event["event_time_ms"]):
                batch.groups.setdefault(due.user_id, user)
                self._dream(batch, due)
        memory = batch.memory(user)
        batch.groups.setdefault(user, user)
        if not (fresh or memory.first_time(record.partition, record.offset)):
            if scheduled and node is not None:  # the memory holds the turn; the schedule had not seen it
                schedule.note_turn(user, str(node["session_id"]), event["event_time_ms"])
            return
        if not memory.fold(event):
            return  # the echo of an event this step applied already
        if fresh:
            memory.emitted([event])
        reawakened = change_as(event, NodeReawakened)
        if reawakened is not None:
            batch.events.extend(self.dreamer.restore(memory, reawakened["node_id"], event["event_time_ms"]))
        if scheduled and node is not None:
            schedule.note_turn(user, str(node["session_id"]), event["event_time_ms"])
