"""Labels, relationship types and bounds: the only things ever interpolated into Cypher.

Everything else travels as a ``$param``. A label or type is checked against a strict pattern
right before it is interpolated, so a payload such as ``Foo) DETACH DELETE n //`` can never
reach a query string; it raises `InvalidIdentifierError`.
"""

from __future__ import annotations

import re
from typing import Final

LABEL: Final = re.compile(r"^[A-Z][A-Za-z0-9_]{0,63}$")
REL_TYPE: Final = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")

#: Every node carries this label (and a unique ``id`` property); it is the one indexed label.
COMMON_LABEL: Final = "Memory"

KIND_LABELS: Final[dict[str, str]] = {
    "event": "Event",
    "concept": "Concept",
    "fact": "Fact",
    "rule": "Rule",
    "user": "User",
    "session": "Session",
    "code_file": "CodeFile",
    "code_module": "Module",
    "code_class": "Class",
    "code_function": "Function",
    "code_method": "Method",
    "code_chunk": "CodeChunk",
    "code_unresolved": "UnresolvedSymbol",
}
MAX_HOPS: Final = 6


class CypherBuildError(ValueError):
    """A query could not be built safely from these inputs."""


class InvalidIdentifierError(CypherBuildError):
    """A label or relationship type outside the allowed pattern."""


class InvalidBoundError(CypherBuildError):
    """A numeric bound (hops) that is not an int in range."""


def check_label(label: str) -> str:
    if not isinstance(label, str) or not LABEL.match(label):
        msg = f"invalid node label {label!r}: expected {LABEL.pattern}"
        raise InvalidIdentifierError(msg)
    return label


def check_rel_type(rel_type: str) -> str:
    if not isinstance(rel_type, str) or not REL_TYPE.match(rel_type):
        msg = f"invalid relationship type {rel_type!r}: expected {REL_TYPE.pattern}"
        raise InvalidIdentifierError(msg)
    return rel_type


def check_hops(hops: int) -> int:
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        msg = f"hops must be an int in 1..{MAX_HOPS}, got {hops!r}"
        raise InvalidBoundError(msg)
    return hops


def label_for_kind(kind: str) -> str:
    """The node label of a node kind: a fixed table, else the kind in CamelCase (``code_chunk`` ->
    ``CodeChunk``). Characters outside letters and digits separate words; the result is checked."""
    known = KIND_LABELS.get(kind)
    if known is not None:
        return known
    words = [w for w in re.split(r"[^A-Za-z0-9]+", kind) if w]
    camel = "".join(w[:1].upper() + w[1:] for w in words) or "Node"
    if not camel[0].isalpha():
        camel = f"K{camel}"
    return check_label(camel[:64])
