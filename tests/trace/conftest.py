"""Fixtures for the Trace tests: the real LoCoMo conversations, read once per session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.benchmarks.locomo_reader import conversation_turns
from engram.schemas.records import ConversationTurn, EventRef

LOCOMO_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "benchdata" / "locomo"


@pytest.fixture(scope="session")
def locomo_raw() -> dict[str, dict[str, object]]:
    files = sorted(LOCOMO_DIR.glob("*.json"))
    if not files:
        pytest.fail(f"no LoCoMo files under {LOCOMO_DIR} (shared/benchdata must sit beside the repository)")
    return {f.stem: json.loads(f.read_text()) for f in files}


@pytest.fixture(scope="session")
def locomo_turns(locomo_raw: dict[str, dict[str, object]]) -> dict[str, list[ConversationTurn]]:
    return {conv: conversation_turns(data, conv) for conv, data in locomo_raw.items()}


def refs(turns: list[ConversationTurn], start: int = 0) -> list[tuple[ConversationTurn, EventRef]]:
    """Turns paired with consecutive offsets of one partition of engram.turns."""
    return [(t, {"topic": "engram.turns", "partition": 0, "offset": start + i}) for i, t in enumerate(turns)]
