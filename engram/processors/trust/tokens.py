"""Bearer tokens: a signed JWT says who asks; nothing else in a request is believed about it.

`TokenVerifier` checks the signature with the key from configuration (HS256 with a shared secret,
or RS256/ES256 with a public key in PEM), requires ``sub`` and ``exp`` and checks expiry against
the caller's clock (so a replay of logged requests can check them at the time they were received),
and returns the principal: ``sub`` is ``user:<id>`` or ``service:<id>``. Library: joserfc (the JOSE
implementation Authlib itself now uses). Every failure is a `TokenError` whose message says why
(missing, malformed, bad signature, expired, not yet valid, wrong audience, bad subject).
"""

from __future__ import annotations

from dataclasses import dataclass

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OctKey, RSAKey

from engram.processors.trust.instances import InstanceError, parse_instance

ALGORITHMS = ("HS256", "RS256", "ES256")


class TokenError(ValueError):
    """A bearer token that does not establish a principal, with the reason."""


@dataclass(frozen=True, slots=True)
class TokenConfig:
    """``key``: the HS256 secret, or the PEM public key for RS256/ES256. ``audience``: required
    ``aud`` when set. ``leeway_s``: clock skew allowed on ``exp`` and ``nbf``."""

    key: str
    algorithm: str = "HS256"
    audience: str | None = None
    leeway_s: int = 30

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            msg = f"unsupported token algorithm {self.algorithm!r}; use one of {', '.join(ALGORITHMS)}"
            raise ValueError(msg)
        if self.algorithm == "HS256" and len(self.key.encode()) < 32:
            msg = "an HS256 token secret needs at least 32 bytes"
            raise ValueError(msg)


def _key(config: TokenConfig) -> OctKey | RSAKey | ECKey:
    if config.algorithm == "HS256":
        return OctKey.import_key(config.key)
    if config.algorithm == "RS256":
        return RSAKey.import_key(config.key)
    return ECKey.import_key(config.key)


class TokenVerifier:
    def __init__(self, config: TokenConfig) -> None:
        self.config = config
        self._key = _key(config)
        self._claims: dict[str, jwt.ClaimsOption] = {"sub": {"essential": True}, "exp": {"essential": True}}
        if config.audience:
            self._claims["aud"] = {"essential": True, "value": config.audience}

    def principal(self, token: str | None, now_s: int) -> str:
        """The principal ``token`` establishes at ``now_s`` (epoch seconds), or a `TokenError`."""
        if not token:
            msg = "no bearer token"
            raise TokenError(msg)
        try:
            decoded = jwt.decode(token, self._key, algorithms=[self.config.algorithm])
            jwt.JWTClaimsRegistry(now=now_s, leeway=self.config.leeway_s, **self._claims).validate(decoded.claims)
        except JoseError as exc:
            msg = f"token rejected: {exc.error}: {exc.description or type(exc).__name__}".rstrip(": ")
            raise TokenError(msg) from exc
        except ValueError as exc:  # not a JWS at all
            msg = f"token rejected: malformed: {exc}"
            raise TokenError(msg) from exc
        return check_principal(str(decoded.claims["sub"]))

    def signer(self, token: str | None) -> str | None:
        """The principal ``token`` names when this key signed it, whatever its times and audience
        (an expired token still says who sent it); None otherwise. Only for telling a requester
        that it was refused (processors/trust/refusals.py), never for granting anything."""
        if not token:
            return None
        try:
            decoded = jwt.decode(token, self._key, algorithms=[self.config.algorithm])
            return check_principal(str(decoded.claims.get("sub", "")))
        except (JoseError, ValueError):  # TokenError is a ValueError
            return None


def check_principal(subject: str) -> str:
    """``subject`` when it names a principal (``user:ID`` or ``service:ID``); a `TokenError` otherwise."""
    try:
        kind = parse_instance(subject).kind
    except InstanceError as exc:
        msg = f"token subject {exc}"
        raise TokenError(msg) from exc
    if kind not in ("user", "service"):
        msg = f"token subject {subject!r} is not a user or a service"
        raise TokenError(msg)
    return subject


def mint(config: TokenConfig, subject: str, expires_s: int, extra: dict[str, object] | None = None) -> str:
    """A token for ``subject`` expiring at ``expires_s`` (for `engram token` and tests; HS256 or a
    private key in ``config.key``)."""
    key = _key(config)
    claims: dict[str, object] = {"sub": subject, "exp": expires_s, **(extra or {})}
    if config.audience:
        claims["aud"] = config.audience
    return jwt.encode({"alg": config.algorithm}, claims, key)
