"""People called by name: "my sister Ana lives in Madrid", later "Ana just moved to Berlin".

The extractor reads a clause that opens on a name and a verb as that person's (subject
``name:Ana``, `subjects.named_subject`), but only the user's memory says who Ana is. Here
(`by_name`) such a candidate is given to the relative the user has named so (an active
``has_sister`` 'Ana' makes it ``user.sister``'s; an earlier candidate of the same turn counts too),
and the rules decide it as any other fact of that relative ("Ana just moved to Berlin" replaces where
she lived). A name the user has given no one ("Caroline is so nice") yields no fact.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from engram.processors.facts.model import CandidateFact, UserFacts, normalize_value
from engram.processors.facts.subjects import NAMED


def by_name(state: UserFacts, candidates: Sequence[CandidateFact]) -> list[CandidateFact]:
    """``candidates`` with each named subject resolved to the relative of that name, or dropped."""
    if not any(c.subject.startswith(NAMED) for c in candidates):
        return list(candidates)
    known = _relatives((f.subject, f.relation, f.value) for f in state.facts.values())
    out: list[CandidateFact] = []
    for cand in candidates:
        if not cand.subject.startswith(NAMED):
            out.append(cand)
            known.update(_relatives([(cand.subject, cand.relation, cand.value)]))
            continue
        who = known.get(normalize_value(cand.subject.removeprefix(NAMED)))
        if who is not None:
            out.append(replace(cand, subject=who))
    return out


def _relatives(facts: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """Name -> ``user.<role>`` for the user's ``has_<role>`` facts whose value is a name."""
    return {
        normalize_value(value): f"user.{relation.removeprefix('has_')}"
        for subject, relation, value in facts
        if subject == "user" and relation.startswith("has_") and value[:1].isupper() and " " not in value.strip()
    }
