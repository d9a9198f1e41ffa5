"""Layer instances: where a memory node lives and what a principal may see.

An instance names one layer's owner: ``system``; ``org:<id>``; ``team:<id>``; ``user:<id>``;
``service:<id>`` names a principal that is not a person (an agent, an ingest job), never a place
memory lives. Ids are lower-case letters, digits and ``._@-``, up to 128 characters: an instance
name reaches Cypher only as a parameter, but a name that could carry an injection payload is
refused at the boundary all the same, with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from engram.schemas.records import Layer

SYSTEM: Final = "system"
KINDS: Final[tuple[str, ...]] = ("system", "org", "team", "user", "service")
LAYER_OF_KIND: Final[dict[str, Layer]] = {"system": "SYSTEM", "org": "ORGANIZATION", "team": "TEAM", "user": "USER"}
_NAME: Final = re.compile(r"^(?:system|(?:org|team|user|service):[a-z0-9][a-z0-9._@-]{0,127})$")


class InstanceError(ValueError):
    """A name that is not a layer instance (or a principal), with the reason."""


@dataclass(frozen=True, slots=True)
class Instance:
    kind: str
    id: str

    @property
    def name(self) -> str:
        return SYSTEM if self.kind == SYSTEM else f"{self.kind}:{self.id}"

    @property
    def layer(self) -> Layer | None:
        """The flat layer this instance belongs to (None for a service)."""
        return LAYER_OF_KIND.get(self.kind)


def parse_instance(name: str) -> Instance:
    if not _NAME.match(name):
        shown = name if len(name) <= 80 else name[:77] + "..."
        msg = f"{shown!r} is not a layer instance (system, org:ID, team:ID, user:ID or service:ID; ID of a-z0-9._@-)"
        raise InstanceError(msg)
    kind, _, ident = name.partition(":")
    return Instance(kind, ident)


def user_instance(user_id: str) -> str:
    return f"user:{user_id}"


def placement_problems(layer: str, instance: str | None, user_id: str | None) -> list[str]:
    """Why an input cannot be written into ``instance`` of ``layer`` (empty: it can). None is
    always placeable: ``system`` for SYSTEM, the author's own instance otherwise."""
    if instance is None:
        return []
    try:
        parsed = parse_instance(instance)
    except InstanceError as exc:
        return [str(exc)]
    if parsed.layer != layer:
        return [f"instance {instance} is not in layer {layer} (it is {parsed.layer or 'a principal, not a place'})"]
    if layer == "USER" and parsed.id != user_id:
        return [f"instance {instance} is not the author's own (user:{user_id})"]
    return []


def naming_problems(names: list[str] | None) -> list[str]:
    """Why a request's instance list is not one (empty: it is, or there is none)."""
    problems = []
    for name in names or ():
        try:
            parse_instance(name)
        except InstanceError as exc:
            problems.append(str(exc))
    return problems
