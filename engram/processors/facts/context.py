"""The reply a turn answers (seed 003's prompt-context): "yes, that's right" confirms what was asked.

An assistant restates what it heard ("So you're at Stripe now?"); the user answers "yep, that's
right". The answer alone says nothing; with the turn it answers, it states the restatement in the
first person ("I'm at Stripe now"). The facts step keeps the assistant's last utterance per user
(at most ``MAX_CONTEXT_CHARS``) and, on a confirmation, extracts from the restatement as the user's
own words.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from engram.processors.facts.extractor import Utterance

MAX_CONTEXT_CHARS: Final = 500
CONFIRMATION: Final = re.compile(
    r"^\s*(?i:yes|yep|yeah|yup|yea|correct|exactly|right|indeed|absolutely|that's\s+(?:right|correct|it)"
    r"|that\s+is\s+(?:right|correct)|you\s+got\s+it|sure\s+is|uh-huh)\b"
    r"(?:[\s,.!]*(?i:that's\s+(?:right|correct|it)|that\s+is\s+(?:right|correct)|exactly|correct|you're\s+right"
    r"|indeed|i\s+am|i\s+do|i\s+did|it\s+is|lol|haha))*[\s.!]*$"
)
_LEAD: Final = re.compile(
    r"^(?i:so|and|ok(?:ay)?|got\s+it|great|nice|cool|i\s+see|just\s+to\s+confirm|to\s+confirm)\W+"
)
_TAG: Final = re.compile(r"[,\s]*(?i:right|correct|is\s+that\s+(?:right|correct)|yes|no)?\s*[?.!]*\s*$")
_PERSON: Final = (
    (re.compile(r"\b(?i:you're|you\s+are)\b"), "I am"),
    (re.compile(r"\b(?i:you've|you\s+have)\b"), "I have"),
    (re.compile(r"\b(?i:you'll|you\s+will)\b"), "I will"),
    (re.compile(r"\b(?i:you'd)\b"), "I would"),
    (re.compile(r"\b(?i:yourself)\b"), "myself"),
    (re.compile(r"\b(?i:your)\b"), "my"),
    (re.compile(r"\b(?i:you)\b"), "I"),
)


def restated(said: str) -> str:
    """An assistant's restatement in the user's words: "So you're at Stripe now?" -> "I am at Stripe now"."""
    text = _TAG.sub("", _LEAD.sub("", said.strip().split("\n")[-1]))
    for pattern, words in _PERSON:
        text = pattern.sub(words, text)
    return text


CORRECTION: Final = re.compile(
    r"^\s*(?:(?i:no|nope|actually|sorry|oops|wait|correction)\W+)*(?i:it's|it\s+is|that's|that\s+is)\s+"
    r"(?P<right>[^,.!?]+?),?\s+(?i:not)\s+(?P<wrong>[^,.!?]+?)[\s.!]*$"
)


def confirmed(answer: Utterance, asked: str) -> Utterance | None:
    """What a user turn states through the reply it answers: a bare confirmation states the
    restatement; "actually it's Hamburg, not Munich" states it with the wrong word put right.
    None when the turn is neither, or nothing was asked."""
    if answer.role != "user" or not asked:
        return None
    if CONFIRMATION.match(answer.text) is not None:
        return replace(answer, text=restated(asked))
    fix = CORRECTION.match(answer.text)
    if fix is not None and fix.group("wrong") in asked:
        return replace(answer, text=restated(asked.replace(fix.group("wrong"), fix.group("right"))))
    return None
