"""Private delivery: which topic an answer goes to, so that it reaches only its requester.

Answers (compiled contexts, graph answers) go to a topic under the shared one's name:
``<base>.<slug>``, where the slug names a principal or an organization (``user.ada``,
``service.support-bot``, ``org.acme``; `topic_slug`). On Kafka, a tenant's credentials are granted
READ on its own prefix only (docker-compose.yml's ACLs), so no tenant's consumer can read
another's answers.

`reply_topic` decides the topic of one request:
- a worker with a token gate: the request may name ``<base>.<slug>`` for its principal itself or
  for an organization the principal reads (a tenant's service reading its users' answers); naming
  nothing means the principal's own topic. Anything else is refused (`DeliveryError`), so a request
  can never make a worker write to another tenant's topic, nor to any topic outside ``<base>.``;
- an open worker (no gate; the demo): the shared ``<base>`` unless the request names a topic
  under ``<base>.``, which it may.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from typing import Final

from engram.processors.trust.instances import parse_instance

_TOPIC_PART: Final = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


class DeliveryError(PermissionError):
    """A reply topic a request may not name, with the reason."""


def topic_slug(name: str) -> str:
    """A principal or instance name as a topic name part: ``org:acme`` -> ``org.acme``. Instance ids
    use ``a-z0-9._@-``; ``@`` is not a topic character and ``_`` is not an id character, so
    ``@`` -> ``_`` keeps the mapping one to one."""
    return parse_instance(name).name.replace(":", ".").replace("@", "_")


def reply_topic(base: str, requested: str | None, principal: str | None, reads: Iterable[str] = ()) -> str:
    """The topic one request's answer goes to (see the module docstring)."""
    if principal is None:
        if requested is None or requested == base:
            return base
        _check_under(base, requested)
        return requested
    own = f"{base}.{topic_slug(principal)}"
    if requested is None:
        return own
    allowed = {own, *(f"{base}.{topic_slug(name)}" for name in reads if name.startswith("org:"))}
    if requested not in allowed:
        msg = f"{principal} may not receive answers on {requested!r}; it may use {', '.join(sorted(allowed))}"
        raise DeliveryError(msg)
    return requested


def listening_topic(base: str, requested: str | None, token: str | None) -> str:
    """Where a requester listens for the answer to a request it sends: the topic it names, its own
    when it sends a token (the token's subject, read without verifying it: only the worker's
    verification decides anything), the shared topic otherwise."""
    if requested is not None:
        return requested
    if not token:
        return base
    return f"{base}.{topic_slug(unverified_subject(token))}"


def unverified_subject(token: str) -> str:
    """The ``sub`` claim of a JWT, decoded without checking its signature (raises `DeliveryError`)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return str(claims["sub"])
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        msg = f"cannot read the subject of the token: {type(exc).__name__}"
        raise DeliveryError(msg) from exc


def _check_under(base: str, requested: str) -> None:
    suffix = requested.removeprefix(f"{base}.")
    if suffix == requested or not _TOPIC_PART.match(suffix):
        msg = f"reply topic {requested!r} is not a topic under {base}."
        raise DeliveryError(msg)
