"""The states a keyed step keeps in hand between batches (streams/held.py)."""

from __future__ import annotations

import pytest

from engram.streams.config import ConfigError, EngramConfig
from engram.streams.held import HeldStates


def _rounds(held: HeldStates[str], users: int, rounds: int) -> int:
    """Batches that found their user's state in hand, users coming round in turn (as a
    partition's users do), each batch writing a new record for its user."""
    records: dict[str, dict[str, int]] = {}
    hits = 0
    for n in range(rounds * users):
        user = f"u{n % users}"
        if held.take(user, records.get(user)) is not None:
            hits += 1
        records[user] = {"n": n}
        held.put(user, records[user], f"state {n}")
    return hits


def test_a_round_of_users_within_the_size_stays_in_hand() -> None:
    assert _rounds(HeldStates(size=8), users=8, rounds=3) == 16  # every batch after the first round


def test_a_round_larger_than_the_size_misses_every_batch() -> None:
    """Why ENGRAM_HELD_STATES must cover a worker's users: least recently used out, users in turn,
    the one wanted next is always the one just dropped."""
    assert _rounds(HeldStates(size=7), users=8, rounds=3) == 0


def test_a_record_the_step_did_not_write_is_not_taken_for_the_state() -> None:
    held: HeldStates[str] = HeldStates(size=2)
    written = {"n": 1}
    held.put("u", written, "state")
    assert held.take("u", {"n": 1}) is None  # an equal record from elsewhere (a restart, another worker)
    held.put("u", written, "state")
    assert held.take("u", written) == "state"


def test_the_size_comes_from_the_config() -> None:
    assert EngramConfig.from_env({"ENGRAM_HELD_STATES": "1500"}).held_states == 1500
    with pytest.raises(ConfigError, match="ENGRAM_HELD_STATES"):
        EngramConfig.from_env({"ENGRAM_HELD_STATES": "0"})
