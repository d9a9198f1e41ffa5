"""Whom a clause is about: the speaker, or someone else the speaker names.

A clause that opens on someone else ("my boss moved to Berlin", "my sister Ana lives in Madrid",
"a friend of mine got a beagle", "one of my coworkers", "our neighbors", "she got a job at Zara")
gives that person's facts (``user.manager``, ``user.friend``, ``user.neighbor``), or none when only a
pronoun says who (``third_party``, ``about``). Such a clause is also read as the speaker's own with the
first-person patterns ("my brother Sam is studying medicine" as "I am studying medicine":
``first_person``), the facts given to the relative; one that reports what the other thinks or says
of the speaker ("my friend thinks I should move") gives nothing (``reported``).
"""

from __future__ import annotations

import re
from typing import Final

from engram.processors.facts import lexicon as lx
from engram.processors.facts.patterns import ENT

SPEAKER: Final = re.compile(r"\b(?i:i|we|me|us)\b")  # the speaker, in a clause that opened on someone else
_OPENING: Final = r"^(?:(?i:so|and|but|oh|also|well|then|yeah|btw|plus|now|actually)\b,?\s+)*"
"""Words a clause may open with before whom it is about."""
_AND_I: Final = r"\s*,?\s*(?i:and|&)\s+(?i:i|me|myself)\b"
""""my wife and I ...": the speaker is in the subject."""
_THIRD_PARTY: Final = re.compile(
    # a clause about someone else: "my sister Ana ...", "our son ...", "she ..." (not "my wife and I ...")
    _OPENING
    + rf"(?:(?i:my|our)\s+(?P<role>(?i:{lx.alternation((*lx.KIN, *lx.KIN_PLURALS, *lx.OTHERS))}))(?:,?\s+{ENT},?)?"
    # "a friend of mine ...", "one of my coworkers ...": someone the speaker knows, not the speaker
    rf"|(?i:an?|one)\s+(?P<one>(?i:{lx.alternation(tuple(lx.KIN))}))\s+(?i:of\s+(?:mine|ours))"
    rf"|(?i:one\s+of\s+(?:my|our))\s+(?:(?P<many>(?i:{lx.alternation(tuple(lx.KIN_PLURALS))}))"
    rf"|(?P<one_of>(?i:{lx.alternation(tuple(lx.KIN))}))s)"
    r"|(?P<pronoun>(?i:he|she|they)))\b"
    rf"(?!{_AND_I})"
)
_THIRD_AUX: Final = {"is": "am", "'s": "am", "has": "have", "was": "was", "will": "will", "can": "can", "just": "just"}
SPEAKER_ONLY: Final = frozenset({"instruction", "wants_to_be_called", "name_is"})
"""Relations only the speaker states of themselves: never given to a relative read as the speaker."""
_REPORTED: Final = re.compile(
    r"\s*,?\s*(?i:(?:always|keeps|still|also|really)\s+)?(?i:thinks|thought|says|said|told\s+me|tells\s+me|reckons"
    r"|believes|feels|suggested|suggests|wants\s+me|insists|insisted|keeps\s+saying|swears)\b"
)


_POSSESSED: Final = re.compile(
    # a clause that opens on something of the speaker's that acts: "my company (just) moved to Austin"
    _OPENING + r"(?i:my|our)\s+(?:(?i:new|old|current|first|own|little|big|best|favorite|favourite)\s+)?(?P<n>[a-z]+)\b"
    rf"(?!'|{_AND_I})"  # "my wife's", "my wife and I": not a thing
    r"(?=\s+(?!(?i:is|was|are|were|will|would|has\s+been|have\s+been|'s|to|at|in|on|for|of)\b)[a-z])"
)


def possessed(clause: str) -> int | None:
    """Where "my X" ends when a clause opens on something of the speaker's that does something ("my
    company moved to Austin", "my car broke down"): what a pattern reads after it is about that
    thing, not the speaker. None when the clause opens otherwise, on a person or a pet the table
    knows, on a group the speaker speaks for ("our team switched to Linear"), or on an attribute
    said with a copula ("my new job is at Google", "my goal is to run a marathon")."""
    match = _POSSESSED.match(clause)
    if match is None:
        return None
    noun = match.group("n").lower()
    if noun in lx.SPEAKER_GROUPS or noun in lx.KIN or noun in lx.KIN_PLURALS or noun in lx.OTHERS or noun in lx.PETS:
        return None
    return match.end()


def reported(clause: str, subject_end: int) -> bool:
    """Whether the clause, after its subject (ending at ``subject_end``), reports what that person
    thinks or says ("my friend thinks I should ...")."""
    return _REPORTED.match(clause, subject_end) is not None


def first_person(rest: str) -> str | None:
    """A third person's verb phrase as the speaker's ("is studying" -> "I am studying", "lives in"
    -> "I live in", "has a peanut allergy" -> "I have a peanut allergy"); None when ``rest`` does
    not open on a verb the table reads."""
    rest = rest.strip(" ,")
    head, _, tail = rest.partition(" ")
    word = head.lower()
    if word in _THIRD_AUX:
        return f"I {_THIRD_AUX[word]} {tail}".rstrip()
    if word.endswith("s") and len(word) > 3 and not word.endswith("ss") and tail:
        return f"I {_base(word)} {tail}"
    if word.endswith("ed") and tail or word in lx.IRREGULAR_PAST:
        return f"I {rest}"
    return None


def _base(verb: str) -> str:
    """A verb's base form from its third person singular: studies -> study, watches -> watch, lives -> live."""
    if verb.endswith("ies"):
        return verb[:-3] + "y"
    if verb.endswith(("ches", "shes", "sses", "xes", "oes")):
        return verb[:-2]
    return verb[:-1]


def third_party(clause: str) -> tuple[str, int] | None:
    """Whom a clause is about when it opens on someone other than the speaker, and where that
    subject ends: ``user.<role>`` for "my sister (Ana) ..." (the role as the relatives' patterns
    name it), "" for "he", "she" or "they" (no one this turn names); None when the clause opens on
    the speaker."""
    match = _THIRD_PARTY.match(clause)
    if match is None:
        return None
    if match.group("pronoun"):
        return "", match.end()
    said = next(g for g in match.group("role", "one", "many", "one_of") if g)
    return f"user.{kin_role(said)}", match.end()


NAMED: Final = "name:"
"""The subject of a clause about someone the speaker calls by name ("Ana lives in Berlin now"): the
reconciler gives their facts to the relative of that name (facts/people.py), or drops them."""
_NAME_VERBS: Final = (
    "is|'s|was|has|had|lives|moved|works|started|turned|got|loves|likes|hates|plays|studies|goes|went|graduated"
    "|quit|left|joined|bought|adopted|broke|became|speaks|teaches|runs|owns|drives|wants|needs|plans"
)
_NAMED_SUBJECT: Final = re.compile(
    _OPENING + r"(?!(?:It|He|She|They|We|You|This|That|There|Here|What|Today|Tomorrow|Yesterday|Everyone|Nobody"
    r"|Everything|Nothing|Someone|Life|Work|Mom|Dad)\b)(?P<name>[A-Z][a-z]+)"
    rf"(?=\s+(?:(?i:just|finally|now|also|still|recently|actually)\s+)?(?i:{_NAME_VERBS})\b)"
)


_FIRST_PERSON: Final = re.compile(r"\b(?i:i|me|my|mine|we|us|our)\b")


def named_subject(clause: str) -> tuple[str, int] | None:
    """``(NAMED + name, end)`` when the clause opens on a person called by name and a verb
    ("Leo turned 7 last week"); None otherwise, and when the speaker is in the clause too ("Dance
    is my passion": the word is no one's name, and what it says is the speaker's)."""
    match = _NAMED_SUBJECT.match(clause)
    if match is None or _FIRST_PERSON.search(clause, match.end()):
        return None
    return NAMED + match.group("name"), match.end()


def kin_role(said: str) -> str:
    """A relative as the patterns name them: "Mom" -> "mother", "best  friend" -> "best friend"."""
    said = re.sub(r"\s+", " ", said.lower())
    return lx.KIN.get(said, lx.KIN_PLURALS.get(said, lx.OTHERS.get(said, said)))


def about(other: str, facts: list[tuple[str, str, str, float]]) -> list[tuple[str, str, str, float]]:
    """The facts a pattern that names no subject read in a clause about ``other``: theirs, not the
    speaker's ("my boss moved to Berlin" is where the boss lives); dropped when ``other`` is a
    pronoun no one named."""
    if not other:
        return [f for f in facts if f[0] != "user"]
    return [
        (other if subject == "user" else subject, relation, value, conf) for subject, relation, value, conf in facts
    ]
