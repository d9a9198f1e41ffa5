"""Bi-temporal queries over the fact log (FactDecided records).

Each decision carries world time (``valid_from_ms`` / ``valid_to_ms``, from the source event)
and transaction time (``recorded_at_ms``: when Engram learned it, also from the source event,
so replays agree). "What did we believe at t" replays the decisions recorded up to t.
"""

from __future__ import annotations

from collections.abc import Iterable

from engram.schemas.changes import change_as
from engram.schemas.records import FactDecided, MemoryEvent

_ACTIVATES = frozenset({"store", "replace"})
_DEACTIVATES = frozenset({"retract", "prune"})


def fact_decisions(events: Iterable[MemoryEvent]) -> list[FactDecided]:
    """The FactDecided changes of a MemoryEvent stream, in log order."""
    return [fact for e in events if (fact := change_as(e, FactDecided)) is not None]


def believed_at(facts: Iterable[FactDecided], user: str, t_ms: int) -> list[FactDecided]:
    """The facts Engram held active for ``user`` at transaction time ``t_ms`` (inclusive), each
    as its latest decision recorded by then, in the order they were first stored.

    ``facts`` is the decision log in log order (``fact_decisions(events)``)."""
    active: dict[str, FactDecided] = {}
    for d in facts:
        if d["user_id"] != user or d["recorded_at_ms"] > t_ms:
            continue
        decision = d["decision"]
        if decision in _ACTIVATES:
            active[d["fact_id"]] = d
        elif decision in _DEACTIVATES:
            active.pop(d["fact_id"], None)
        elif decision == "promote" and d["fact_id"] in active:
            active[d["fact_id"]] = d
    return list(active.values())


def valid_at(facts: Iterable[FactDecided], user: str, t_ms: int) -> list[FactDecided]:
    """The facts true in the world at ``t_ms`` as Engram knows now: a stored version with
    ``valid_from_ms <= t_ms`` whose retraction (if any) has ``valid_to_ms > t_ms``. Pruning is
    forgetting, not falsity, so it does not end validity."""
    intervals: list[tuple[FactDecided, int | None]] = []
    open_at: dict[str, int] = {}
    for d in facts:
        if d["user_id"] != user:
            continue
        fid = d["fact_id"]
        if d["decision"] in _ACTIVATES and fid not in open_at:
            open_at[fid] = len(intervals)
            intervals.append((d, None))
        elif d["decision"] == "retract" and fid in open_at:
            index = open_at.pop(fid)
            intervals[index] = (intervals[index][0], d["valid_to_ms"])
        elif d["decision"] == "prune":
            open_at.pop(fid, None)
    return [d for d, end in intervals if d["valid_from_ms"] <= t_ms and (end is None or t_ms < end)]
