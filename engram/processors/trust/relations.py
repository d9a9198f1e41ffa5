"""Relationship tuples, Zanzibar-style: ``subject relation object`` facts, and what they grant.

Tuples arrive as `RelationshipChanged` events (added or removed) and are applied in order, so a
replay of the compacted topic rebuilds the same state. Relations:

| relation    | subject           | object              | grants                                      |
|-------------|-------------------|---------------------|---------------------------------------------|
| member_of   | user, service     | team, org           | read the object and everything it is part of |
| part_of     | team, org         | team, org           | the object's readers include its parts' members |
| reader_of   | user, service     | team, org, user     | read the object (and what it is part of)    |
| writer_of   | user, service     | system, team, org, user | write into the object                    |

Reading (userset rewrite): a principal reads ``system``, itself when it is a user, every object of
its ``member_of`` and ``reader_of`` tuples, and, transitively, every object those are ``part_of``.
Writing: a user writes into its own instance; anyone writes where a ``writer_of`` tuple says so
(membership alone grants no write into a shared layer). A ``part_of`` tuple that would close a
cycle is refused (`RelationError`), so the closure is a DAG walk.

Changes apply to the next resolution: `Relationships.version` moves with every change and
`readable` caches per (principal, version), so a revocation takes effect at the next request.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Final

from engram.processors.trust.instances import SYSTEM, parse_instance

RELATIONS: Final[dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "member_of": (frozenset({"user", "service"}), frozenset({"team", "org"})),
    "part_of": (frozenset({"team", "org"}), frozenset({"team", "org"})),
    "reader_of": (frozenset({"user", "service"}), frozenset({"team", "org", "user"})),
    "writer_of": (frozenset({"user", "service"}), frozenset({"system", "team", "org", "user"})),
}


class RelationError(ValueError):
    """A tuple that cannot hold: an unknown relation, a wrong kind of subject or object, a cycle."""


@dataclass(frozen=True, slots=True, order=True)
class Relationship:
    subject: str
    relation: str
    object: str

    def check(self) -> None:
        """Raise `RelationError` (or `InstanceError`) when the tuple is malformed."""
        kinds = RELATIONS.get(self.relation)
        if kinds is None:
            msg = f"unknown relation {self.relation!r}; expected one of {', '.join(RELATIONS)}"
            raise RelationError(msg)
        subject, obj = parse_instance(self.subject), parse_instance(self.object)
        if subject.kind not in kinds[0] or obj.kind not in kinds[1]:
            allowed = f"{self.relation} relates {sorted(kinds[0])} to {sorted(kinds[1])}"
            msg = f"{self.subject} {self.relation} {self.object}: {allowed}"
            raise RelationError(msg)
        if self.subject == self.object:
            msg = f"{self.subject} {self.relation} itself"
            raise RelationError(msg)


@dataclass
class Relationships:
    """The current tuples; see the module docstring."""

    tuples: set[Relationship] = field(default_factory=set)
    version: int = 0
    _up: dict[str, set[str]] = field(default_factory=dict)  # instance -> what it grants reading of
    _cache: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict)

    def add(self, tuple_: Relationship) -> None:
        tuple_.check()
        if tuple_ in self.tuples:
            return
        if tuple_.relation == "part_of" and tuple_.subject in self._reachable(tuple_.object):
            msg = f"{tuple_.subject} part_of {tuple_.object} would close a cycle"
            raise RelationError(msg)
        self.tuples.add(tuple_)
        if tuple_.relation != "writer_of":
            self._up.setdefault(tuple_.subject, set()).add(tuple_.object)
        self._changed()

    def remove(self, tuple_: Relationship) -> None:
        if tuple_ not in self.tuples:
            return
        self.tuples.discard(tuple_)
        if tuple_.relation != "writer_of" and not any(
            t.subject == tuple_.subject and t.object == tuple_.object and t.relation != "writer_of" for t in self.tuples
        ):
            self._up.get(tuple_.subject, set()).discard(tuple_.object)
        self._changed()

    def _changed(self) -> None:
        self.version += 1
        self._cache.clear()

    def _reachable(self, start: str) -> set[str]:
        seen = {start}
        queue = deque([start])
        while queue:
            for nxt in self._up.get(queue.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def readable(self, principal: str) -> frozenset[str]:
        """The instances ``principal`` (``user:…`` or ``service:…``) may read."""
        key = (principal, self.version)
        found = self._cache.get(key)
        if found is None:
            reached = self._reachable(principal) | {SYSTEM}
            if not principal.startswith("user:"):
                reached.discard(principal)
            found = self._cache[key] = frozenset(reached)
        return found

    def writable(self, principal: str) -> frozenset[str]:
        """The instances ``principal`` may write into."""
        own = {principal} if principal.startswith("user:") else set()
        granted = {t.object for t in self.tuples if t.subject == principal and t.relation == "writer_of"}
        return frozenset(own | granted)
