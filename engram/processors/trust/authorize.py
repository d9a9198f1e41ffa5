"""The gate every request passes: who asks (the token), for whose memory, with which layers.

`Gate.access` is what the compile path and the graph query path call before any retrieval:
- open (no token verifier configured): the request's claimed layers are validated and believed,
  as before tokens existed (the demo and the tests; `EngramConfig.auth_key` unset);
- closed: the token gives the principal (``user:…`` or ``service:…``); the principal must be the
  user whose memory is asked for, or read that user's instance (a ``reader_of user:…`` tuple, for
  an agent acting for the user); the layers are those of the instances it reads (SYSTEM always,
  ORGANIZATION / TEAM when it reads an org / a team, USER for the asked user's own memory), and
  the instances are the org, team and system instances it reads plus the asked user's own,
  both narrowed, never widened, by the layers and instances the request claims.
`Gate.check_write` is what ingest calls for every admitted turn and code change: on a closed gate,
the token's principal must write into the instance the input places its memory in
(`processors.rebac.node_instance` of its layer, author and instance): its own user instance, or
one a ``writer_of`` tuple names.
Every refusal is an `AuthorizationError` with the reason; the caller dead-letters it as
``unauthorized``, and answers it with the reason where `Gate.refusal_topic` says its requester hears.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from engram.processors.rebac import LayerError, authorized_layers, node_instance
from engram.processors.trust.delivery import DeliveryError, reply_topic
from engram.processors.trust.instances import InstanceError, parse_instance, user_instance
from engram.processors.trust.relations import Relationships
from engram.processors.trust.tokens import TokenError, TokenVerifier
from engram.schemas.records import Layer


class AuthorizationError(PermissionError):
    """A request its principal may not make, with the reason."""


@dataclass(frozen=True, slots=True)
class Access:
    """What a request may read: layers, and layer instances (None: an open worker, every one);
    who asks (None on an open worker) and every instance it reads (for `reply_topic`)."""

    layers: frozenset[Layer]
    instances: frozenset[str] | None
    principal: str | None = None
    reads: frozenset[str] = frozenset()

    def reply_topic(self, base: str, requested: str | None) -> str:
        """Where the answer goes (processors/trust/delivery.py); raises `AuthorizationError`."""
        try:
            return reply_topic(base, requested, self.principal, self.reads)
        except (DeliveryError, InstanceError) as exc:
            raise AuthorizationError(str(exc)) from exc


def claimed_instances(names: Iterable[str] | None) -> frozenset[str] | None:
    """The instances a request names, validated (None: it names none)."""
    if names is None:
        return None
    try:
        return frozenset(parse_instance(name).name for name in names)
    except InstanceError as exc:
        raise AuthorizationError(str(exc)) from exc


@dataclass
class Gate:
    verifier: TokenVerifier | None = None
    relationships: Relationships = field(default_factory=Relationships)

    @property
    def closed(self) -> bool:
        return self.verifier is not None

    def access(
        self, user_id: str, token: str | None, claimed: Iterable[str], now_s: int, named: Iterable[str] | None = None
    ) -> Access:
        """What a request for ``user_id``'s memory may read (see the module docstring): ``claimed``
        layers and ``named`` instances narrow it."""
        try:
            asked = authorized_layers(claimed)
        except LayerError as exc:
            raise AuthorizationError(str(exc)) from exc
        narrowed = claimed_instances(named)
        if self.verifier is None:
            return Access(asked, narrowed)
        try:
            principal = self.verifier.principal(token, now_s)
        except TokenError as exc:
            raise AuthorizationError(str(exc)) from exc
        layers = asked & self.granted(principal, user_id)
        instances = self.instances(principal, user_id)
        reads = self.relationships.readable(principal)
        return Access(layers, instances if narrowed is None else instances & narrowed, principal, reads)

    def refusal_topic(self, base: str, token: str | None, requested: str | None) -> str | None:
        """Where the requester of a refused request hears why: the topic its answer would go to
        (processors/trust/delivery.py), for the principal whose key-signed token it sent, expired or
        not. None when it is not known (a closed gate, and no token or one this key did not sign)
        or names a topic it may not receive on: then only the dead letter tells."""
        principal = None
        if self.verifier is not None:
            principal = self.verifier.signer(token)
            if principal is None:
                return None
        reads = self.relationships.readable(principal) if principal is not None else frozenset()
        try:
            return reply_topic(base, requested, principal, reads)
        except (DeliveryError, InstanceError):
            return None

    def check_write(self, token: str | None, layer: str, user_id: str | None, instance: str | None, now_s: int) -> None:
        """Raise `AuthorizationError` unless the token's principal may write an input placed in
        (``layer``, ``user_id``, ``instance``); an open gate lets every write through."""
        if self.verifier is None:
            return
        try:
            principal = self.verifier.principal(token, now_s)
        except TokenError as exc:
            raise AuthorizationError(str(exc)) from exc
        target = node_instance(layer, user_id, instance)
        if target not in self.relationships.writable(principal):
            msg = f"{principal} may not write into {target}"
            raise AuthorizationError(msg)

    def instances(self, principal: str, user_id: str) -> frozenset[str]:
        """The instances ``principal`` reads when asking for ``user_id``'s memory: the shared ones
        it reads (system, its orgs and teams, transitively) and the asked user's own; never another
        user's, even one it may read for (that is another request)."""
        shared = {name for name in self.relationships.readable(principal) if not name.startswith("user:")}
        return frozenset({*shared, user_instance(user_id)})

    def granted(self, principal: str, user_id: str) -> frozenset[Layer]:
        """The layers ``principal`` reads when asking for ``user_id``'s memory."""
        own = user_instance(user_id)
        readable = self.relationships.readable(principal)
        if principal != own and own not in readable:
            msg = f"{principal} may not read {own}'s memory"
            raise AuthorizationError(msg)
        layers: set[Layer] = {"USER"}
        for name in readable:
            layer = parse_instance(name).layer
            if layer is not None and layer != "USER":
                layers.add(layer)
        return frozenset(layers)
