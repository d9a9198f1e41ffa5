"""Routes, intents and the explained routing decision (seed 000 §4.1, seed 002 intents)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Final, Protocol


class Route(StrEnum):
    """FACTUAL → System 1 (hybrid vector + BM25); THEMATIC/RESEARCH → System 2; CODE → Code Brain."""

    FACTUAL = "FACTUAL"
    THEMATIC = "THEMATIC"
    RESEARCH = "RESEARCH"
    CODE = "CODE"

    @property
    def system(self) -> str:
        return _SYSTEM[self]


_SYSTEM: Final = MappingProxyType(
    {
        Route.FACTUAL: "system1",
        Route.THEMATIC: "system2",
        Route.RESEARCH: "system2",
        Route.CODE: "code",
    }
)


class Intent(StrEnum):
    """Seed 002's retrieval intents; they pick the fallback chain and how strict the bounds are."""

    EXPLORE = "explore"
    ANSWER = "answer"
    LOCATE = "locate"
    TIME_BOXED = "time-boxed"


_INTENT_ALIASES: Final = MappingProxyType(
    {
        "explore": Intent.EXPLORE,
        "answer": Intent.ANSWER,
        "locate": Intent.LOCATE,
        "time-boxed": Intent.TIME_BOXED,
        "time_boxed": Intent.TIME_BOXED,
        "timeboxed": Intent.TIME_BOXED,
    }
)


def parse_intent(hint: str | None) -> Intent | None:
    """An intent from a request's `intent_hint` (case and separator tolerant), or None if unknown."""
    if not hint:
        return None
    return _INTENT_ALIASES.get(hint.strip().lower().replace(" ", "-"))


@dataclass(frozen=True, slots=True)
class RouteDecision:
    """The route, the intent, a one-line human reason, and the features that led there."""

    route: Route
    intent: Intent
    reason: str
    features: dict[str, float] = field(default_factory=dict)


class RouteClassifier(Protocol):
    def route(self, query: str, intent_hint: str | None) -> RouteDecision: ...
