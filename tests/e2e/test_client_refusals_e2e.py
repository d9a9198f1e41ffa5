"""Issue 48, end to end: a refused request is answered, and the client raises at once.

Through the real broker and a worker with a token key, with the client's default settings: an
expired token, a principal asking for another user's memory, and an invalid request (a zero
budget) each raise the SDK's typed error well before the ask's timeout (they used to wait it out:
refusals were only dead-lettered); a request with a token the workers' key did not sign is not
answered (nobody known to tell), and the client says so when it times out. The refusals are
dead-lettered as before. A turn over the one maximum size never leaves the client.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from engram_client import (
    MAX_TURN_BYTES,
    ClientConfig,
    EngramAuthorizationError,
    EngramClient,
    EngramClientError,
    EngramInputError,
    EngramInvalidRequestError,
)

from engram.infra.config import StackInfo
from engram.processors.trust.tokens import TokenConfig, mint
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess
from tests.e2e.support import standin_config
from tests.e2e.test_trust_e2e import dead_letters, wait_for

pytestmark = pytest.mark.e2e

SECRET = "e2e-refusal-secret-of-32-bytes-at-least"
TIMEOUT_S = 20.0  # what the asks would wait without an answer
PROMPT_S = 10.0  # a refusal raises well within this (the worker's first compile included)


def token(subject: str, ttl_s: int = 600, secret: str = SECRET) -> str:
    return mint(TokenConfig(secret), subject, int(time.time()) + ttl_s)


async def raised_within(client: EngramClient, user: str, budget: int = 500) -> tuple[BaseException, float]:
    started = time.monotonic()
    try:
        await client.ask("Where do I live?", user_id=user, session_id="s", token_budget=budget, timeout_s=TIMEOUT_S)
    except EngramClientError as exc:
        return exc, time.monotonic() - started
    msg = "the ask was answered"
    raise AssertionError(msg)


async def scenario(config: EngramConfig, prefix: str) -> None:
    def client(tok: str) -> EngramClient:
        return EngramClient(ClientConfig(config.bootstrap_servers, tok, prefix))

    async with client(token("user:ada")) as ada:
        await ada.publish_turn(user_id="ada", session_id="s", turn_index=0, content="I moved to Berlin.")
        answered = await ada.ask("Where do I live?", user_id="ada", session_id="s", timeout_s=TIMEOUT_S)
        assert answered["error_code"] is None
        refused, took = await raised_within(ada, "bob")
        assert isinstance(refused, EngramAuthorizationError) and took < PROMPT_S, (refused, took)
        assert refused.code == "unauthorized" and "user:ada may not read user:bob's memory" in refused.reason
        invalid, took = await raised_within(ada, "ada", budget=0)
        assert isinstance(invalid, EngramInvalidRequestError) and took < PROMPT_S, (invalid, took)
        assert "token_budget 0 is outside" in invalid.reason
        with pytest.raises(EngramInputError, match="over the"):
            await ada.publish_turn(user_id="ada", session_id="s", turn_index=1, content="x" * (MAX_TURN_BYTES + 1))
        with pytest.raises(EngramInputError, match="empty or only whitespace"):
            await ada.publish_turn(user_id="ada", session_id="s", turn_index=1, content="   ")
    async with client(token("user:ada", ttl_s=-3600)) as expired:
        refused, took = await raised_within(expired, "ada")
        assert isinstance(refused, EngramAuthorizationError) and took < PROMPT_S, (refused, took)
        assert "expired" in refused.reason
    async with client(token("user:ada", secret="a-key-the-workers-do-not-hold-32-bytes")) as forged:
        started = time.monotonic()
        with pytest.raises(EngramClientError, match="only dead-lettered"):
            await forged.ask("Where do I live?", user_id="ada", session_id="s", timeout_s=3.0)
        assert time.monotonic() - started >= 3.0


def test_a_refused_request_raises_at_once(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name):
        asyncio.run(scenario(config, unique_name))
        letters = wait_for(lambda: len(compiles := [d for d in dead_letters(config) if d["stage"] == "compile"]) >= 4
                           and compiles, "four dead letters")  # fmt: skip
        assert {d["error_type"] for d in letters} == {"AuthorizationError", "ValidationError"}
