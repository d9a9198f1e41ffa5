"""What a fact's value must be: whole.

A value says its thing itself: not through a pronoun the turn does not resolve ("working on one
with my group", "had them for 3 years", "named her Tilly"), not about the listener ("pay you a
visit"), and not a run-on (more than ``MAX_WORDS`` words). The pattern table's values (extractor.py)
and ordinary speech's (speech.py) are held to the same checks, and trimmed the same way.
"""

from __future__ import annotations

import re
from typing import Final

from engram.processors.facts import lexicon as lx

MAX_WORDS: Final = 14
"""A value longer than this, once trimmed, is a run-on or a story: not one fact."""
_PRONOUN_END: Final = re.compile(r"\b(?i:it|them|this|that|one|these|those|him|her|there)$")
_PRONOUN_FIRST: Final = re.compile(
    r"^(?!(?i:make|makes|made|making)\s+it\s+(?:to|through|out|back|home|in\s+time)\b)"  # idiom: "made it to the top"
    r"\S+\s+(?:(?i:for|with|to|about|on|at|from|of|into)\s+)?(?:(?i:it|them|him)\b(?!\s+(?i:is|are|was|were)\b)"
    r"|(?i:this|that|these|those|her|another|one)\b(?=\s+(?i:for|with|to|about|on|at|from|in|as|so|and|a|an|the|too|again|yet|out"
    r"|up|back|over)\b|\s*$))"
)
"""A pronoun as the verb's object ("had them for 3 years", "waiting for this for a long time"); "this"
or "that" before a noun is a determiner ("made this honey garlic chicken")."""
_RUN_ON: Final = re.compile(
    r"\s*[-\u2013\u2014]\s+|\s*[:;(,]\s*|\.\.\.|\s+(?i:who|which|that|because|'cause|since|so\s+that|when|while|if"
    r"|but|though|although|whenever|until|unless)\b"
)
DANGLING: Final = re.compile(r"(?:\s+(?i:on|in|at|for|with|to|of|from|by|about|into|a|an|the))+$")
"""What trimming can leave at a value's end: "dark mode on [everything]", "wanting to play this one
for a [while]"."""
PRONOUNS: Final = lx.words("it that this them one those these him her")
"""Pronouns that alone, or at a value's head, name nothing the value says."""
_ANAPHORIC: Final = re.compile(
    r"\b(?i:them|him)\b|\b(?i:her)\b(?=\s+[A-Z]|\s*$|\s+(?i:a|an|the|for|to|with|in|on|at|up|out|back)\b)"
    r"|\b(?i:this|that)\b(?=\s*$|\s+(?i:at|in|on|for|with|to|from|into|out|up|back|again|too)\b)"
    r"|(?<!(?i:make|made)\s)(?<!(?i:makes)\s)\b(?i:it)\b(?!\s+(?i:is|was|has|will|would|'s)\b)"
)
"""Pronouns that stand for someone or something named elsewhere ("named her Tilly", "check it out",
"include this at the start")."""
_OWNER: Final = re.compile(r"\b(?i:her|his)\b")
_NAMED_BEFORE: Final = re.compile(r"\b(?:(?i:my|our)\s+\w+|[A-Z][a-z]+)\b")


def _unowned(value: str) -> bool:
    """Whether a possessive stands for someone the value does not name ("taking notes on her
    style"), not for someone it names before it ("my sister and her kids")."""
    owner = _OWNER.search(value)
    return owner is not None and _NAMED_BEFORE.search(value, 1, owner.start()) is None


_YOU: Final = re.compile(r"\b(?i:you|your|yours|yourself)\b")  # not chat's "u": a value may name the U.S.


def whole(value: str) -> bool:
    """Whether a value says its thing itself: not by a pronoun this turn does not resolve
    ("working on one with my group", "hear back from them soon"), not about the listener ("pay you
    a visit"), and not a run-on (at most ``MAX_WORDS`` words)."""
    words = value.split()
    head = words[0].lower() if words else ""
    return not (
        head in PRONOUNS
        and (len(words) < 2 or words[1].lower() != "of")
        or _ANAPHORIC.search(value)
        or _unowned(value)
        or _YOU.search(value)
        or len(words) > MAX_WORDS
    )


def trimmed(value: str) -> str:
    """A long verb phrase up to where a relative or subordinate clause opens ("build my own family
    and put a roof over kids who haven't had that" -> "build my own family and put a roof over kids")."""
    cut = _RUN_ON.search(value)
    return value[: cut.start()].rstrip(" ,") if cut else value


def pronoun_object(value: str) -> bool:
    """Whether a verb phrase's object is a pronoun ("grown fond of them", "add it to my list"): it
    names its object in another sentence, and unresolved, the value is garbled, not a fact."""
    return _PRONOUN_END.search(value) is not None or _PRONOUN_FIRST.match(value) is not None
