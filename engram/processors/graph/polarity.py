"""Statement polarity for contradiction linking (seed 004 §4.8: negation patterns and antonyms).

A statement's key is its index terms with negations left out and each antonym replaced by its
opposite; its polarity is the parity of negations and antonyms. Two fact-like nodes with the same
key and different polarities say the same thing, once affirmed and once denied.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

_NEGATION: Final = re.compile(r"\b(?:not|no|never|cannot|none|nobody|nothing|neither|nor|without)\b|n't\b")
# Stems that only carry a negation ("isn't" splits into "isn" and "t"; "can't" into "can" and "t").
_NEGATION_STEMS: Final = frozenset({"never", "cannot", "none", "nobody", "nothing", "neither", "without", "isn",
                                    "aren", "wasn", "weren", "doesn", "didn", "won", "wouldn", "shouldn", "couldn",
                                    "hasn", "haven", "hadn", "can"})  # fmt: skip
# Antonym stems → the stem of their opposite: each counts as one negation.
_ANTONYMS: Final = {"dislik": "lik", "hat": "lov", "fals": "true", "disabl": "enabl", "deny": "allow",
                    "closed": "open", "off": "on", "decrease": "increase", "reject": "accept", "lose": "win",
                    "stop": "start"}  # fmt: skip

Polarity = tuple[tuple[str, ...], int]


def polarity(text: str, stems: Sequence[str]) -> Polarity:
    """(key, parity) of a statement; ``stems``: its index terms (`processors.retrieval.text.terms`)."""
    negations = len(_NEGATION.findall(text.lower()))
    key = []
    for term in stems:
        if term in _NEGATION_STEMS:
            continue
        if term in _ANTONYMS:
            negations += 1
            term = _ANTONYMS[term]
        key.append(term)
    return tuple(key), negations % 2
