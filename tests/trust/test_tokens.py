"""Bearer tokens: only a valid, unexpired, well-signed token establishes a principal."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from engram.processors.trust.tokens import TokenConfig, TokenError, TokenVerifier, mint

SECRET = "engram-test-secret-of-at-least-32-bytes"
NOW = 1_800_000_000
HS = TokenConfig(SECRET)


def test_a_valid_token_gives_its_subject() -> None:
    assert TokenVerifier(HS).principal(mint(HS, "user:ada", NOW + 60), NOW) == "user:ada"
    assert TokenVerifier(HS).principal(mint(HS, "service:ingest", NOW + 60), NOW) == "service:ingest"


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (None, "no bearer token"),
        ("", "no bearer token"),
        ("not.a.jwt", "token rejected"),
        (mint(HS, "user:ada", NOW - 3600), "expired"),
        (mint(TokenConfig("another-secret-that-is-32-bytes-long!"), "user:ada", NOW + 60), "bad_signature"),
        (mint(HS, "team:payments", NOW + 60), "not a user or a service"),
        (mint(HS, "user:ada' OR '1'='1", NOW + 60), "not a layer instance"),
    ],
)
def test_bad_tokens_are_refused_with_the_reason(token: str | None, reason: str) -> None:
    with pytest.raises(TokenError, match=reason):
        TokenVerifier(HS).principal(token, NOW)


def test_audience_and_clock_skew() -> None:
    config = TokenConfig(SECRET, audience="engram")
    verifier = TokenVerifier(config)
    assert verifier.principal(mint(config, "user:ada", NOW + 60), NOW) == "user:ada"
    with pytest.raises(TokenError, match="aud"):
        verifier.principal(mint(HS, "user:ada", NOW + 60, {"aud": "other"}), NOW)
    assert verifier.principal(mint(config, "user:ada", NOW - 10), NOW) == "user:ada"  # within the leeway


def test_rs256_with_a_public_key_from_config() -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    token = mint(TokenConfig(pem.decode(), "RS256"), "user:ada", NOW + 60)
    assert TokenVerifier(TokenConfig(public.decode(), "RS256")).principal(token, NOW) == "user:ada"
    with pytest.raises(TokenError):
        TokenVerifier(HS).principal(token, NOW)  # an RS256 token is not accepted as HS256


def test_weak_or_unknown_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        TokenConfig("short")
    with pytest.raises(ValueError, match="unsupported"):
        TokenConfig(SECRET, "none")
