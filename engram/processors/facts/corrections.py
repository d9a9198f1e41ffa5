"""A user's correction of their own words: "oops, his name's Jack not Jake", "sorry, I meant Lyon, not Lille".

The words alone do not say which fact they put right, so the correction is heard in two steps:
- the extractor hears it (`said`) and gives one candidate of relation ``corrected``: the right
  value, and the wrong one in ``corrects``;
- the reconciler resolves it against the user's active facts (`resolve`): each fact of the same
  scope whose value says the wrong word(s) (at most ``MAX_CORRECTED``, the latest first) becomes a
  candidate of its own subject and relation with them put right, and the id of the fact it
  corrects. The rule ``correct-a-value`` then retracts that fact and stores the new one as its
  replacement, with the reason.

A correction that meets no fact stays ``corrected``, and the rule ``drop-unresolved-correction``
drops it with the reason. An assistant's restatement put right ("actually it's Hamburg, not
Munich" after "So you live in Munich?") is `context.confirmed`'s, and is read before this.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from engram.processors.facts import lexicon as lx
from engram.processors.facts.model import CandidateFact, UserFacts, normalize_value

CORRECTED: Final = "corrected"
"""The relation of a heard correction before it is resolved; never stored."""
MAX_CORRECTED: Final = 3
"""Facts one correction may put right (the latest recorded first)."""

_CUE: Final = (
    r"(?:(?i:oh|oops|sorry|sry|wait|actually|correction|typo|my\s+bad|no|nope|ugh|lol|haha|turns\s+out)\b[\s,.!:-]*)"
)
_SAYS: Final = (
    r"(?i:(?:his|her|their|its|the\s+[a-z]+'s|my\s+[a-z]+'s)\s+name(?:'s|\s+is)"
    r"|it's|it\s+is|that's|that\s+is|i\s+meant|i\s+mean|make\s+that|should\s+(?:be|say|have\s+said))\s+"
)
_VALUE: Final = r"[\w'&.+-]+(?:\s+[\w'&.+-]+){0,3}?"
_CORRECTION: Final = re.compile(
    rf"(?:^|(?<=[.!?;,])\s*)\s*(?P<cue>{_CUE}*)(?P<says>{_SAYS}(?:(?i:actually|really|just)\s+)?)?"
    rf"(?P<right>{_VALUE})\s*,?\s+(?i:not)\s+(?P<wrong>{_VALUE})"
    r"(?=\s*(?:[,.;!?]|$)|\s+(?i:lol|haha|sorry|oops|autocorrect|typo)\b)"
)
_NAME_FORM: Final = re.compile(r"(?i:name|meant|mean|make\s+that|should)")
_NO_VALUE: Final = lx.words(
    "yes yeah yep no nope ok okay sure really kidding joking bad yet now much quite exactly true right"
)
"""Words that answer or hedge ("haha yes, not kidding"): no value anyone corrects."""
_CLAUSE: Final = re.compile(r"\b(?i:is|are|was|were|am|'s|my|our|i|we|he|she|they)\b")
"""A right-hand side with a subject or a verb is a statement the patterns read ("Correction: my
manager is Dana, not Priya"), not a bare value."""


def said(text: str) -> tuple[str, str] | None:
    """(right, wrong) when ``text`` corrects something the speaker said; None otherwise.

    A correction says so: by a cue ("oops", "sorry", "actually", "correction", "typo") before "it's
    X, not Y" or before "X, not Y", or by its form ("his name's X not Y", "I meant X, not Y")."""
    if "not" not in text.lower():  # every correction says "not": most turns are done here
        return None
    for match in _CORRECTION.finditer(text):
        cue, says = match.group("cue"), match.group("says") or ""
        if not cue.strip() and not _NAME_FORM.search(says):
            continue  # "it's sunny, not rainy": a description, not a correction
        right, wrong = match.group("right").strip(" .'"), match.group("wrong").strip(" .'")
        if not says and _CLAUSE.search(right):
            continue
        if {normalize_value(right), normalize_value(wrong)} & _NO_VALUE:
            continue
        if right and wrong and normalize_value(right) != normalize_value(wrong):
            return right, wrong
    return None


def resolve(state: UserFacts, candidates: Sequence[CandidateFact]) -> list[tuple[CandidateFact, str]]:
    """Each candidate with the id of the fact it corrects ("" for all but resolved corrections);
    a correction that meets no active fact is kept as it came (see the module docstring)."""
    if not any(cand.corrects for cand in candidates):
        return [(cand, "") for cand in candidates]
    out: list[tuple[CandidateFact, str]] = []
    for cand in candidates:
        resolved = _corrected(state, cand) if cand.relation == CORRECTED and cand.corrects else []
        out.extend(resolved or [(cand, "")])
    return out


def _corrected(state: UserFacts, cand: CandidateFact) -> list[tuple[CandidateFact, str]]:
    wrong = normalize_value(cand.corrects)
    if not wrong:
        return []
    said_wrong = re.compile(rf"(?<!\w){re.escape(wrong)}(?!\w)")
    facts = sorted(
        (
            f
            for f in state.facts.values()
            if f.scope == cand.scope and f.scope_id == cand.scope_id and said_wrong.search(f.norm)
        ),
        key=lambda f: (-f.recorded_at_ms, f.fact_id),
    )[:MAX_CORRECTED]
    in_value = re.compile(rf"(?<!\w){re.escape(cand.corrects.strip())}(?!\w)", re.IGNORECASE)
    out: list[tuple[CandidateFact, str]] = []
    for fact in facts:
        value, count = in_value.subn(lambda _: cand.value, fact.value)  # the value as it is, not a template
        if count == 0:
            value = cand.value if fact.norm == wrong else ""
        if value:
            fixed = replace(cand, subject=fact.subject, relation=fact.relation, value=value, corrects="")
            out.append((fixed, fact.fact_id))
    return out
