"""When to dream: event-time triggers per partition, so that a replay fires every dream again.

Two triggers (``DreamConfig``):
- **idle**: a session with no turn for ``idle_ms`` of event time; the dream runs at
  ``last turn + idle_ms``.
- **window**: a tumbling window of ``window_ms``; a user active in window w dreams at its end,
  ``(w + 1) * window_ms``.

Time is the partition's *stream time*: the largest turn time seen on the partition so far (only
turns move it; derived events carry times at or before it). A trigger is due once stream time
reaches it, so a quiet user's dream fires as soon as any turn on the partition passes the deadline
(a wholly quiet partition waits: event time does not move without events, as in any event-time
system). ``advance`` is called *before* a turn is applied, with the turn's time: the dreams it
returns see the memory exactly as it was before that turn, whatever the batching. Due dreams come
in (time, user, trigger, session) order. Deterministic and JSON-able (a table holds it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from engram.processors.dreaming.config import BALANCED, DreamConfig

Trigger = Literal["idle", "window"]
NEVER: Final = 1 << 62


@dataclass(frozen=True, slots=True, order=True)
class DueDream:
    at_ms: int
    user_id: str
    trigger: Trigger
    session_id: str = ""

    @property
    def reason(self) -> str:
        if self.trigger == "idle":
            return f"session {self.session_id} idle since {self.at_ms} (event time)"
        return f"tumbling window ending at {self.at_ms} (event time)"


@dataclass(slots=True)
class DreamSchedule:
    """One partition's pending triggers and stream time; ``applied``: the last engram.memory offset
    of the partition it has seen (its record and the users' are written apart, so each guards
    itself against a batch that comes again after a crash)."""

    config: DreamConfig = BALANCED
    stream_ms: int = -1
    sessions: dict[str, dict[str, int]] = field(default_factory=dict)  # user -> session -> last turn ms
    windows: dict[str, int] = field(default_factory=dict)  # user -> window index with undreamed turns
    _next_ms: int = NEVER  # the earliest pending deadline (a cache)
    applied: int = -1

    def first_time(self, offset: int) -> bool:
        """True (and recorded) when ``offset`` lies past what this schedule has seen."""
        if offset <= self.applied:
            return False
        self.applied = offset
        return True

    def advance(self, time_ms: int) -> list[DueDream]:
        """Move stream time to ``time_ms`` (never back) and take the dreams now due, in order."""
        if time_ms <= self.stream_ms:
            return []
        self.stream_ms = time_ms
        if time_ms < self._next_ms:
            return []
        due: list[DueDream] = []
        idle, window = self.config.idle_ms, self.config.window_ms
        for user, sessions in self.sessions.items():
            for session, last in sessions.items():
                if last + idle <= time_ms:
                    due.append(DueDream(last + idle, user, "idle", session))
        for user, index in self.windows.items():
            if (index + 1) * window <= time_ms:
                due.append(DueDream((index + 1) * window, user, "window"))
        for dream in due:
            if dream.trigger == "idle":
                del self.sessions[dream.user_id][dream.session_id]
            else:
                del self.windows[dream.user_id]
        self.sessions = {u: s for u, s in self.sessions.items() if s}
        self._next_ms = self._earliest()
        return sorted(due)

    def forget(self, user_id: str) -> None:
        """Drop the user's pending dreams (its memory was erased)."""
        self.sessions.pop(user_id, None)
        self.windows.pop(user_id, None)
        self._next_ms = self._earliest()

    def note_turn(self, user_id: str, session_id: str, time_ms: int) -> None:
        """A turn was applied: its session's idle deadline and its window are pending. A late turn
        whose deadline stream time has passed is dreamed at the next moment stream time moves (a
        catch-up dream at a new time, never a repeat of one that already ran)."""
        sessions = self.sessions.setdefault(user_id, {})
        idle, window = self.config.idle_ms, self.config.window_ms
        last = max(sessions.get(session_id, time_ms), time_ms, self.stream_ms + 1 - idle)
        sessions[session_id] = last
        index = max(self.windows.get(user_id, -1), time_ms // window, self.stream_ms // window)
        self.windows[user_id] = index
        self._next_ms = min(self._next_ms, last + idle, (index + 1) * window)

    def _earliest(self) -> int:
        idle = [last + self.config.idle_ms for s in self.sessions.values() for last in s.values()]
        windows = [(i + 1) * self.config.window_ms for i in self.windows.values()]
        return min(idle + windows, default=NEVER)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stream_ms": self.stream_ms,
            "sessions": self.sessions,
            "windows": self.windows,
            "applied": self.applied,
        }

    @staticmethod
    def from_dict(data: dict[str, Any], config: DreamConfig = BALANCED) -> DreamSchedule:
        schedule = DreamSchedule(
            config,
            int(data["stream_ms"]),
            {str(u): {str(s): int(t) for s, t in v.items()} for u, v in data["sessions"].items()},
            {str(u): int(i) for u, i in data["windows"].items()},
        )
        schedule._next_ms = schedule._earliest()
        schedule.applied = int(data.get("applied", -1))  # absent in older states
        return schedule
