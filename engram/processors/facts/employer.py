"""Where a user is "at" is where they work, when what they said says so: "left Figma, i'm at Notion now".

"I'm at Notion now" alone says where the speaker is (``currently_in``), as "I'm at Heathrow" does;
the words cannot tell a company from a place. The user's own words around it can:
- the same turn ends a job ("left Figma, i'm at Notion now", "handed in my notice ... I'm at Stripe
  now"): a ``no_longer_works_at`` among the turn's candidates;
- the place is one the user has a job event with ("interview with Stripe on thursday", "an offer
  from Stripe"): an active fact whose value says so.
Then the candidate is read as ``works_at`` (`employer_read`), and the rules decide it as any other:
a single-valued employer replaces the old one, with the reason. A place named with "the" ("at the
airport") is never read so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from engram.processors.facts.model import CandidateFact, UserFacts, normalize_value

AT: Final = "currently_in"
JOB_ENDED: Final = "no_longer_works_at"
_JOB_EVENT: Final = r"(?:(?:job\s+)?interview\s+(?:with|at)|(?:job\s+)?offer\s+from|applied\s+(?:to|at))"


def employer_read(state: UserFacts, candidates: Sequence[CandidateFact]) -> list[CandidateFact]:
    """``candidates`` with each ``currently_in`` the user's words make an employer read as ``works_at``."""
    if not any(c.relation == AT for c in candidates):
        return list(candidates)
    job_ended = any(c.relation == JOB_ENDED for c in candidates)
    return [
        replace(c, relation="works_at")
        if c.relation == AT and _named(c.value) and (job_ended or _job_event(state, c))
        else c
        for c in candidates
    ]


def _named(value: str) -> bool:
    """A name ("Notion", "St James's"), not a place said with "the" or in lower case."""
    return value[:1].isupper() and not value.lower().startswith("the ")


def _job_event(state: UserFacts, cand: CandidateFact) -> bool:
    said = re.compile(rf"\b{_JOB_EVENT}\s+{re.escape(normalize_value(cand.value))}(?!\w)")
    return any(
        f.scope == cand.scope and f.scope_id == cand.scope_id and said.search(f.norm) for f in state.facts.values()
    )
