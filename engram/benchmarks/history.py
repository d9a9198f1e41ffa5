"""Dreaming as a history grows: the memory agent's dream step over long per-user histories, CPU by tenth.

A user's thousandth turn must not cost more than their tenth (issue 20). The ingest bench measures
that end to end, where the broker and the sinks hide it until a history is thousands of turns long;
this bench isolates the part that grows with history, dreaming. ``--turns`` turns round-robin over
``--users`` users (``bench ingest``'s turns: sessions of 40, a user's turns ``--user-gap-ms`` apart,
by default as ``bench ingest`` spaces 50 users), through the Trace and the facts step in process
(not measured), then through the worker's dream step (``streams.dream_step.DreamStep``) in batches
of ``BATCH`` records, each batch's dream events coming back as input after it, as they do through
engram.memory. Only the dream step's process CPU time is measured, each batch's shared over the tenths
of the turns its records derive from.

- ``cpu_ms_per_turn_by_tenth``: the dream step's CPU per turn in each tenth of the run.
- ``late_vs_early``: CPU per turn in the second and third tenths (the first holds the warm-up, when
  sessions have not gone idle yet) over the last two tenths: 1.0 is flat, below it the late turns
  cost more. The issue's goal is at least 0.8.
- ``dream_share``: the share of the step's CPU spent in dreams (the rest folds events and writes
  the state records).
- ``digest``: sha256 over the dream events, in order: the same input gives the same digest, so two
  commits can be compared for identical output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tqdm import tqdm

from engram.benchmarks.dream import in_arrival_order
from engram.benchmarks.ingest import make_turns, texts
from engram.processors.dreaming.dream import Dreamer
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.schedule import DueDream
from engram.processors.tokens import default_token_counter
from engram.schemas.record import Record
from engram.schemas.records import MemoryEvent
from engram.streams.agents.ingest import apply_writes, group_by_key
from engram.streams.dream_step import DreamStep
from engram.streams.steps import derive_turns

MEMORY_TOPIC: Final = "engram.memory"
BATCH: Final = 500
TENTHS: Final = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=12000, help="turns in all")
    parser.add_argument("--users", type=int, default=2, help="users the turns go round (each gets turns/users)")
    parser.add_argument("--user-gap-ms", type=int, default=50_000, help="event time between a user's turns")
    parser.add_argument("--data", type=Path, default=None, help="a folder of LoCoMo files to take texts from")


@dataclass
class _TimedDreamer(Dreamer):
    """A Dreamer that adds up the process CPU time of its dreams."""

    cpu_s: float = 0.0

    def dream(self, memory: UserMemory, due: DueDream) -> list[MemoryEvent]:
        started = time.process_time()
        try:
            return super().dream(memory, due)
        finally:
            self.cpu_s += time.process_time() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.turns < TENTHS * args.users or args.users < 1:
        msg = f"--turns must be at least {TENTHS} per user and --users at least 1"
        raise SystemExit(msg)
    turns = make_turns(args.turns, args.users, texts(args.data), gap_ms=max(1, args.user_gap_ms // args.users))
    records = [Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(turns)]
    memory = in_arrival_order(derive_turns(records, MEMORY_TOPIC)[0])
    dreamer = _TimedDreamer(count=default_token_counter().count)
    step = DreamStep(dreamer)
    cpu = [0.0] * TENTHS
    digest = hashlib.sha256()
    states: dict[str, Any] = {}
    echoes: list[MemoryEvent] = []
    dreams = offset = source = 0
    for start in tqdm(range(0, len(memory), BATCH), desc="dream step", unit="batch", disable=args.json):
        batch = [*echoes, *memory[start : start + BATCH]]
        inputs = [Record(MEMORY_TOPIC, 0, offset + i, 0, None, e) for i, e in enumerate(batch)]
        offset += len(inputs)
        before = time.process_time()
        writes, echoes = step.process(states, group_by_key(step, inputs))
        spent, fresh = time.process_time() - before, memory[start : start + BATCH]
        for event in fresh:  # the batch's CPU shared over the turns its records derive from
            source = event["sources"][0]["offset"] if event["sources"] else source  # a timer's: the turn before
            cpu[min(TENTHS - 1, source * TENTHS // args.turns)] += spent / len(fresh)
        apply_writes(states, writes)
        dreams += len(echoes)
        for event in echoes:
            digest.update(json.dumps(event, sort_keys=True).encode())
    return _result(args, cpu, dreamer.cpu_s, dreams, digest.hexdigest())


def _result(args: argparse.Namespace, cpu: list[float], dream_s: float, events: int, digest: str) -> dict[str, Any]:
    step_s = sum(cpu)
    per_tenth = args.turns / TENTHS
    per_turn = [round(s * 1000 / per_tenth, 3) for s in cpu]
    early, late = sum(cpu[1:3]) / 2, sum(cpu[-2:]) / 2
    return {
        "turns": args.turns,
        "users": args.users,
        "turns_per_user": args.turns // args.users,
        "user_gap_ms": args.user_gap_ms,
        "cpu_ms_per_turn_by_tenth": per_turn,
        "late_vs_early": round(early / late, 3) if late else None,
        "step_cpu_s": round(step_s, 2),
        "dream_share": round(dream_s / step_s, 3) if step_s else None,
        "dream_events": events,
        "digest": digest[:16],
        "texts": "LoCoMo turns" if args.data is not None else "bench ingest's synthetic texts",
    }
