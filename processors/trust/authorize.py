"""The gate every request passes: who asks (the token), for whose memory, with which layers.

`Gate.layers` is what the compile path and the graph query path call before any retrieval:
- open (no token verifier configured): the request's claimed layers are validated and believed,
  as before tokens existed (the demo and the tests; `EngramConfig.auth_key` unset);
- closed: the token gives the principal (``user:…`` or ``service:…``); the principal must be the
  user whose memory is asked for, or read that user's instance (a ``reader_of user:…`` tuple, for
  an agent acting for the user); the layers are those of the instances it reads (SYSTEM always,
  ORGANIZATION / TEAM when it reads an org / a team, USER for the asked user's own memory),
  narrowed, never widened, by the layers the request claims.
Every refusal is an `AuthorizationError` with the reason; the caller dead-letters it as
``unauthorized``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from processors.rebac import LayerError, authorized_layers
from processors.trust.instances import parse_instance, user_instance
from processors.trust.relations import Relationships
from processors.trust.tokens import TokenError, TokenVerifier
from schemas.records import Layer


class AuthorizationError(PermissionError):
    """A request its principal may not make, with the reason."""


@dataclass
class Gate:
    verifier: TokenVerifier | None = None
    relationships: Relationships = field(default_factory=Relationships)

    @property
    def closed(self) -> bool:
        return self.verifier is not None

    def layers(self, user_id: str, token: str | None, claimed: Iterable[str], now_s: int) -> frozenset[Layer]:
        """The layers a request for ``user_id``'s memory may read (see the module docstring)."""
        try:
            asked = authorized_layers(claimed)
        except LayerError as exc:
            raise AuthorizationError(str(exc)) from exc
        if self.verifier is None:
            return asked
        try:
            principal = self.verifier.principal(token, now_s)
        except TokenError as exc:
            raise AuthorizationError(str(exc)) from exc
        return asked & self.granted(principal, user_id)

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
