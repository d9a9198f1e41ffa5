"""The time hierarchy (seed 002's TOC): year → month → week → day → segment, per user.

Built incrementally as episodes arrive (``add``). Period keys, all UTC:
- year ``2023``, month ``2023-05``;
- week ``2023-05/W19``: the part of ISO week 19 that falls in May, so the tree stays a tree;
- day ``2023-05-08``; segment ``2023-05-08/<session id>``: one session's turns of one day.
A period knows its bounds (``start_ms`` inclusive, ``end_ms`` exclusive), parent and children; a
segment knows its episodes. ``take_changed`` hands over the periods changed since the last call
(their summaries and counts are then published, processors/toc/publish.py), and ``take_unpublished``
a period's CONTAINS targets placed since (only those edges are published again: re-sending every
edge of a changed period made each dream cost what the period holds, not what changed). Order-independent:
the same episodes in any order give the same index. JSON round trip: ``to_dict``/``from_dict``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from engram.processors.toc.tallies import Tallies
from engram.processors.toc.tally import Tally, difference

if TYPE_CHECKING:
    from engram.processors.toc.publish import Digest

LEVELS: Final = ("year", "month", "week", "day", "segment")


@dataclass(slots=True)
class Period:
    level: str
    key: str
    start_ms: int
    end_ms: int
    parent: str | None
    children: set[str] = field(default_factory=set)
    episodes: set[str] = field(default_factory=set)  # segments only
    sessions: set[str] = field(default_factory=set)
    size: int = 0  # episodes inside (derived: not in the JSON form)


def period_keys(time_ms: int, session_id: str) -> list[tuple[str, str, int, int]]:
    """(level, key, start_ms, end_ms) from the year down to the segment of an episode's time."""
    t = datetime.fromtimestamp(time_ms / 1000.0, tz=UTC)
    year = datetime(t.year, 1, 1, tzinfo=UTC)
    month = datetime(t.year, t.month, 1, tzinfo=UTC)
    next_month = datetime(t.year + (t.month == 12), t.month % 12 + 1, 1, tzinfo=UTC)
    day = datetime(t.year, t.month, t.day, tzinfo=UTC)
    monday = day - timedelta(days=day.weekday())
    week_start, week_end = max(monday, month), min(monday + timedelta(days=7), next_month)
    iso_week = t.isocalendar().week
    day_key = day.strftime("%Y-%m-%d")
    return [
        ("year", f"{t.year:04d}", _ms(year), _ms(datetime(t.year + 1, 1, 1, tzinfo=UTC))),
        ("month", month.strftime("%Y-%m"), _ms(month), _ms(next_month)),
        ("week", f"{month.strftime('%Y-%m')}/W{iso_week:02d}", _ms(week_start), _ms(week_end)),
        ("day", day_key, _ms(day), _ms(day + timedelta(days=1))),
        ("segment", f"{day_key}/{session_id}", _ms(day), _ms(day + timedelta(days=1))),
    ]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@dataclass(slots=True)
class TocIndex:
    """``digests``: each period's digest as its summary last read it (processors/toc/publish.py),
    dropped when an episode is placed under the period. ``tallies``: each period's term counts as of
    its segments' latest digests (processors/toc/tally.py), shifted by what a segment's new digest
    changes; those the last dream did not read held frozen (processors/toc/tallies.py). Both
    derived, so not in the JSON form. ``unpublished``: per changed period, the children (or a
    segment's episodes) placed under it since its last publish; ``published``: how many episodes the
    user had had (their arrivals) at the last publish, from which a memory read back marks them again
    (``mark_unpublished``)."""

    user_id: str
    periods: dict[str, Period] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    unpublished: dict[str, set[str]] = field(default_factory=dict, compare=False, repr=False)
    published: int = 0
    digests: dict[str, Digest] = field(default_factory=dict, compare=False, repr=False)
    tallies: Tallies = field(default_factory=Tallies, compare=False, repr=False)

    def add(self, node_id: str, time_ms: int, session_id: str) -> None:
        """Place an episode; every period on its path is marked changed."""
        path = period_keys(time_ms, session_id)
        segment = self.periods.get(path[-1][1])
        fresh = segment is None or node_id not in segment.episodes
        parent: str | None = None
        for level, key, start, end in path:
            period = self.periods.get(key)
            if period is None:
                period = self.periods[key] = Period(level, key, start, end, parent)
            if parent is not None and key not in self.periods[parent].children:
                self.periods[parent].children.add(key)
                self.unpublished.setdefault(parent, set()).add(key)
            period.sessions.add(session_id)
            if level == "segment" and node_id not in period.episodes:
                period.episodes.add(node_id)
                self.unpublished.setdefault(key, set()).add(node_id)
            period.size += fresh
            self.changed.add(key)
            self.digests.pop(key, None)
            parent = key

    def remove(self, node_id: str, time_ms: int, session_id: str) -> None:
        """Take an episode out (it was removed); periods left empty go, the others are changed."""
        path = [key for _, key, _, _ in period_keys(time_ms, session_id)]
        segment = self.periods.get(path[-1])
        if segment is None or node_id not in segment.episodes:
            return
        segment.episodes.discard(node_id)
        self.unpublished.get(segment.key, set()).discard(node_id)
        for key in reversed(path):
            period = self.periods[key]
            period.size -= 1
            self.digests.pop(key, None)
            self.changed.discard(key)
            if period.size == 0:
                if period.level == "segment":
                    self.retally(key, None)
                self.tallies.discard(key)
                del self.periods[key]
                self.unpublished.pop(key, None)
                if period.parent is not None:
                    self.periods[period.parent].children.discard(key)
                    self.unpublished.get(period.parent, set()).discard(key)
                continue
            self.changed.add(key)
            if period.level != "segment":
                period.sessions = set().union(*(self.periods[c].sessions for c in period.children))

    def retally(self, segment: str, fresh: Tally | None) -> None:
        """Make ``fresh`` the segment's tally (None: it has none), and shift every tallied period
        above it by the difference, so each stays the sum of the segment tallies under it."""
        old = self.tallies.pop(segment)
        counts, words = difference(fresh or Tally(), old)
        if fresh is not None:
            self.tallies[segment] = fresh
        key = self.periods[segment].parent
        while key is not None:
            tally = self.tallies.get(key)
            if tally is not None:
                tally.shift(counts, words)
            key = self.periods[key].parent

    def settle(self) -> None:
        """Freeze the tallies the last dream did not read; past the ones kept in hand, the finest
        levels first (`Tallies.settle`)."""
        self.tallies.settle(lambda key: LEVELS.index(self.periods[key].level) if key in self.periods else len(LEVELS))

    def take_changed(self) -> list[str]:
        """The periods changed since the last call, coarsest level first, then by key."""
        changed = sorted(self.changed, key=lambda k: (LEVELS.index(self.periods[k].level), k))
        self.changed.clear()
        return changed

    def take_unpublished(self, key: str) -> list[str]:
        """The period's CONTAINS targets placed since its last publish (sorted), now published."""
        return sorted(self.unpublished.pop(key, ()))

    def mark_unpublished(self, fresh: Callable[[str], bool]) -> None:
        """A memory read back: mark unpublished, in the periods changed since the last publish, the
        episodes placed since (``fresh``: their arrival is ``published`` or later) and the periods
        every episode under which is fresh (they came with them)."""
        old: set[str] = set()
        for key, period in self.periods.items():
            if period.level != "segment":
                continue
            placed = {e for e in period.episodes if fresh(e)}
            if placed and key in self.changed:
                self.unpublished[key] = placed
            up: str | None = key if len(placed) < len(period.episodes) else None
            while up is not None and up not in old:
                old.add(up)
                up = self.periods[up].parent
        for key, period in self.periods.items():
            if period.parent in self.changed and key not in old:
                self.unpublished.setdefault(period.parent, set()).add(key)

    def roots(self) -> list[str]:
        return sorted(k for k, p in self.periods.items() if p.parent is None)

    def episodes_under(self, key: str) -> list[str]:
        """Every episode inside a period (sorted ids)."""
        period = self.periods[key]
        if period.level == "segment":
            return sorted(period.episodes)
        return sorted(e for child in period.children for e in self.episodes_under(child))

    def count(self, key: str) -> int:
        return self.periods[key].size

    def to_dict(self) -> dict[str, Any]:
        rows = [
            [p.level, p.key, p.start_ms, p.end_ms, p.parent, sorted(p.episodes), sorted(p.sessions)]
            for p in sorted(self.periods.values(), key=lambda p: (LEVELS.index(p.level), p.key))
        ]
        return {"user_id": self.user_id, "periods": rows, "changed": sorted(self.changed), "published": self.published}

    @staticmethod
    def from_dict(data: dict[str, Any], fresh: Callable[[str], bool] = lambda _: True) -> TocIndex:
        """From the JSON form; ``fresh`` says which episodes came since the last publish (default:
        all, so a changed period publishes every edge again)."""
        index = TocIndex(str(data["user_id"]))
        for level, key, start, end, parent, episodes, sessions in data["periods"]:
            index.periods[key] = Period(level, key, start, end, parent, set(), set(episodes), set(sessions))
        for key, period in index.periods.items():
            if period.parent is not None:
                index.periods[period.parent].children.add(key)
            if period.level == "segment":
                index._count_up(key, len(period.episodes))
        index.changed = set(data["changed"])
        index.published = int(data.get("published", 0))  # absent in older states
        index.mark_unpublished(fresh)
        return index

    def _count_up(self, key: str | None, size: int) -> None:
        while key is not None:
            period = self.periods[key]
            period.size += size
            key = period.parent
