"""`engram token SUBJECT` mints only what a worker accepts: a user or a service principal."""

from __future__ import annotations

import pytest

from engram.processors.trust.tokens import TokenConfig, TokenVerifier
from engram.streams.cli import main as cli_main

KEY = "engram-test-secret-of-at-least-32-bytes"


@pytest.mark.parametrize("subject", ["maya", "team:payments", "user:Maya", "user:"])
def test_a_subject_a_worker_would_refuse_is_refused_with_the_form_it_needs(
    subject: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENGRAM_AUTH_KEY", KEY)
    assert cli_main(["token", subject]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"cannot mint a token for {subject!r}" in err and "user:ID or service:ID" in err


def test_a_user_gets_a_token_a_worker_accepts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ENGRAM_AUTH_KEY", KEY)
    assert cli_main(["token", "user:maya"]) == 0
    token = capsys.readouterr().out.strip()
    assert TokenVerifier(TokenConfig(KEY)).signer(token) == "user:maya"
