"""Fact triples: candidates from extraction, stored facts, and the normalization both share.

A candidate is what an extractor believes a turn says; a stored fact is what the rule engine
decided to keep. Times are epoch milliseconds (UTC) taken from source events, never the clock.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final, Literal, TypeAlias

from engram.schemas.events import stable_id

Scope: TypeAlias = Literal["user", "agent", "flow"]
SCOPES: Final[tuple[Scope, ...]] = ("user", "agent", "flow")
Horizon: TypeAlias = Literal["short_term", "long_term"]
CATEGORIES: Final[tuple[str, ...]] = (
    "personal",
    "preference",
    "task",
    "relationship",
    "skill",
    "context",
    "instruction",
    "temporal",
    "other",
)

_RELATION_JUNK = re.compile(r"[^a-z0-9_.]+")
_VALUE_JUNK = re.compile(r"[^\w\s'+#.-]+")
_SPACES = re.compile(r"\s+")
_LEADING_ARTICLE = re.compile(r"^(?:a|an|the|my|our)\s+")


@lru_cache(maxsize=1 << 16)
def normalize_value(value: str) -> str:
    """Lower-case, NFKC, drop punctuation (keeping + # . - ' inside words), collapse spaces,
    strip a leading article. ``normalize_value("  The Google, Inc.!") == "google inc"``."""
    text = unicodedata.normalize("NFKC", value).casefold()
    text = _VALUE_JUNK.sub(" ", text)
    text = _SPACES.sub(" ", text).strip(" .-'")
    return _LEADING_ARTICLE.sub("", text)


@lru_cache(maxsize=1 << 12)
def normalize_relation(relation: str) -> str:
    """``"Works At"`` -> ``"works_at"``: a CLIPS-safe symbol of ``[a-z0-9_.]``."""
    text = unicodedata.normalize("NFKC", relation).casefold().strip()
    text = _RELATION_JUNK.sub("_", text).strip("_")
    return text or "unknown"


@lru_cache(maxsize=1 << 12)
def normalize_subject(subject: str) -> str:
    return normalize_relation(subject) if subject.strip() else "user"


@dataclass(frozen=True, slots=True)
class CandidateFact:
    """One extracted triple. ``source_event_ids`` name the turns it came from.

    ``valid_from_ms`` is the world time the fact became true when the text says so; ``None``
    means "the time of the source event". ``corrects``: the value a self-correction says was
    wrong ("his name's Jack, not Jake": value "Jack", corrects "Jake"; facts/corrections.py)."""

    subject: str
    relation: str
    value: str
    confidence: float
    scope: Scope = "user"
    scope_id: str = ""
    source_event_ids: tuple[str, ...] = ()
    valid_from_ms: int | None = None
    corrects: str = ""

    def normalized(self) -> CandidateFact:
        """Itself when already normalized (an extractor's candidates are: no copy per candidate)."""
        subject, relation = normalize_subject(self.subject), normalize_relation(self.relation)
        value, confidence = " ".join(self.value.split()), min(1.0, max(0.0, float(self.confidence)))
        unchanged = subject == self.subject and relation == self.relation and value == self.value
        if unchanged and type(self.confidence) is float and confidence == self.confidence:
            return self
        return CandidateFact(
            subject=subject,
            relation=relation,
            value=value,
            confidence=confidence,
            scope=self.scope,
            scope_id=self.scope_id,
            source_event_ids=self.source_event_ids,
            valid_from_ms=self.valid_from_ms,
            corrects=self.corrects,
        )


def scope_key(scope: str, scope_id: str, subject: str) -> str:
    """What contradiction is judged within: one scope instance and one subject."""
    return f"{scope}:{scope_id}:{subject}"


@lru_cache(maxsize=1 << 16)
def fact_id(user_id: str, scope: str, scope_id: str, subject: str, relation: str, value: str) -> str:
    """Deterministic: the same normalized triple for the same user and scope is the same fact."""
    return stable_id("fact", user_id, scope, scope_id, subject, relation, normalize_value(value))


@dataclass(slots=True)
class StoredFact:
    """An active fact as the reconciler holds it (one row of the paper's MemoryFact)."""

    fact_id: str
    scope: str
    scope_id: str
    subject: str
    relation: str
    value: str
    norm: str
    category: str
    horizon: str
    confidence: float
    access_count: int
    valid_from_ms: int
    recorded_at_ms: int
    last_access_ms: int
    source_event_ids: list[str] = field(default_factory=list)
    corrects: bool = False  # it replaced an earlier value: the latest word on it, never pruned
    # What contradiction is judged within (`scope_key`), kept: matching reads it for every active
    # fact of a user at every batch, and scope and subject never change.
    key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.key = scope_key(self.scope, self.scope_id, self.subject)

    def to_dict(self) -> dict[str, object]:
        return {
            "fact_id": self.fact_id,
            "scope": self.scope,
            "scope_id": self.scope_id,
            "subject": self.subject,
            "relation": self.relation,
            "value": self.value,
            "norm": self.norm,
            "category": self.category,
            "horizon": self.horizon,
            "confidence": self.confidence,
            "access_count": self.access_count,
            "valid_from_ms": self.valid_from_ms,
            "recorded_at_ms": self.recorded_at_ms,
            "last_access_ms": self.last_access_ms,
            "source_event_ids": list(self.source_event_ids),
        } | ({"corrects": True} if self.corrects else {})

    @staticmethod
    def from_dict(data: dict[str, object]) -> StoredFact:
        ids = data.get("source_event_ids", [])
        return StoredFact(
            fact_id=str(data["fact_id"]),
            scope=str(data["scope"]),
            scope_id=str(data["scope_id"]),
            subject=str(data["subject"]),
            relation=str(data["relation"]),
            value=str(data["value"]),
            norm=str(data.get("norm", normalize_value(str(data["value"])))),
            category=str(data["category"]),
            horizon=str(data["horizon"]),
            confidence=float(str(data["confidence"])),
            access_count=int(str(data["access_count"])),
            valid_from_ms=int(str(data["valid_from_ms"])),
            recorded_at_ms=int(str(data["recorded_at_ms"])),
            last_access_ms=int(str(data["last_access_ms"])),
            source_event_ids=[str(i) for i in ids] if isinstance(ids, list) else [],
            corrects=data.get("corrects") is True,
        )


@dataclass(slots=True)
class UserFacts:
    """One user's active facts: the per-user state a Faust table holds, keyed by user.

    Insertion order is decision order, so iteration (and the JSON form) is deterministic."""

    user_id: str
    facts: dict[str, StoredFact] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"user_id": self.user_id, "facts": [f.to_dict() for f in self.facts.values()]}

    @staticmethod
    def from_dict(data: dict[str, object]) -> UserFacts:
        rows = data.get("facts", [])
        state = UserFacts(user_id=str(data["user_id"]))
        if isinstance(rows, list):
            for row in rows:
                fact = StoredFact.from_dict(row)
                state.facts[fact.fact_id] = fact
        return state
