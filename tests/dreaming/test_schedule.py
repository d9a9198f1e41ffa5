"""Dream triggers on event time (processors/dreaming/schedule.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engram.processors.dreaming.config import DAY_MS, MINUTE_MS, DreamConfig
from engram.processors.dreaming.schedule import DreamSchedule, DueDream

CONFIG = DreamConfig(idle_ms=10 * MINUTE_MS, window_ms=DAY_MS)
T0 = 100 * DAY_MS + 9 * 60 * MINUTE_MS  # 09:00 on day 100


def feed(schedule: DreamSchedule, turns: list[tuple[str, str, int]]) -> list[DueDream]:
    fired: list[DueDream] = []
    for user, session, time_ms in turns:
        fired.extend(schedule.advance(time_ms))
        schedule.note_turn(user, session, time_ms)
    return fired


def test_a_session_idle_for_t_idle_dreams_when_stream_time_passes_the_deadline() -> None:
    schedule = DreamSchedule(CONFIG)
    fired = feed(schedule, [("ada", "s1", T0), ("ada", "s1", T0 + 5 * MINUTE_MS), ("bo", "s9", T0 + 9 * MINUTE_MS)])
    assert fired == []
    # Another user's turn moves the partition's stream time past ada's deadline.
    fired = feed(schedule, [("bo", "s9", T0 + 16 * MINUTE_MS)])
    assert fired == [DueDream(T0 + 15 * MINUTE_MS, "ada", "idle", "s1")]
    assert "idle" in fired[0].reason


def test_the_tumbling_window_dreams_at_its_end_once_per_active_user() -> None:
    schedule = DreamSchedule(CONFIG)
    feed(schedule, [("ada", "s1", T0), ("bo", "s2", T0 + MINUTE_MS)])
    next_day = (T0 // DAY_MS + 1) * DAY_MS
    fired = schedule.advance(next_day + MINUTE_MS)
    assert [d for d in fired if d.trigger == "window"] == [
        DueDream(next_day, "ada", "window"),
        DueDream(next_day, "bo", "window"),
    ]
    assert schedule.advance(next_day + 2 * MINUTE_MS) == []


def test_stream_time_never_goes_back_and_a_late_turn_fires_nothing() -> None:
    schedule = DreamSchedule(CONFIG)
    feed(schedule, [("ada", "s1", T0 + 30 * MINUTE_MS)])
    assert schedule.advance(T0) == []
    assert schedule.stream_ms == T0 + 30 * MINUTE_MS


turn_lists = st.lists(
    st.tuples(st.sampled_from(["ada", "bo", "cy"]), st.sampled_from(["s1", "s2"]), st.integers(0, 3 * DAY_MS)),
    max_size=40,
)


@given(turn_lists, st.integers(0, 40))
def test_a_restored_schedule_fires_exactly_what_the_original_would(turns: list[tuple[str, str, int]], cut: int) -> None:
    """The table round trip mid-stream changes nothing: a restart fires the same dreams."""
    ordered = sorted(turns, key=lambda t: t[2])
    whole = feed(DreamSchedule(CONFIG), ordered)
    first = DreamSchedule(CONFIG)
    fired = feed(first, ordered[:cut])
    restored = DreamSchedule.from_dict(first.to_dict(), CONFIG)
    fired += feed(restored, ordered[cut:])
    assert fired == whole


@given(turn_lists)
def test_every_dream_is_due_when_it_fires_and_fires_once(turns: list[tuple[str, str, int]]) -> None:
    schedule = DreamSchedule(CONFIG)
    fired: list[DueDream] = []
    for user, session, time_ms in turns:
        due = schedule.advance(time_ms)
        assert all(d.at_ms <= schedule.stream_ms for d in due)
        fired.extend(due)
        schedule.note_turn(user, session, time_ms)
    assert len(set(fired)) == len(fired)
