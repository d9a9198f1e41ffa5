"""Issue 18, end to end: the light client publishes turns, asks, and follows its own contexts.

Through the real broker and a worker subprocess (with a token key, so the client's token is what
lets it in): Ada's and Bob's turns published with `publish_turn` (each confirmed by the broker);
`ask` returns Ada's compiled context built from her turns; `contexts("ada")` yields Ada's contexts
and never Bob's, while Bob asks at the same time; a policy Ada publishes is pinned first in her
next contexts (the README's client section shows these calls).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from engram_client import ClientConfig, EngramClient

from engram.infra.config import StackInfo
from engram.processors.trust.tokens import TokenConfig, mint
from engram.streams.admin import ensure_topics
from engram.streams.runner import WorkerProcess, metric_value
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e

SECRET = "e2e-client-secret-of-32-bytes-at-least"
ADA = ["I moved to Berlin last spring.", "I work on the payments ledger at Acme."]
BOB = ["I live in Lisbon.", "I am learning the cello."]
POLICY = "Always answer Ada in German."


def token(subject: str) -> str:
    return mint(TokenConfig(SECRET), subject, int(time.time()) + 600)


async def scenario(config: ClientConfig, bob_config: ClientConfig, worker: WorkerProcess) -> None:
    async with EngramClient(config) as ada, EngramClient(bob_config) as bob:
        for i, text in enumerate(ADA):
            await ada.publish_turn(user_id="ada", session_id="ada-s", turn_index=i, content=text)
        for i, text in enumerate(BOB):
            await bob.publish_turn(user_id="bob", session_id="bob-s", turn_index=i, content=text)
        deadline = time.monotonic() + 60
        while metric_value(worker.scrape() or "", "engram_ingest_messages_total") < len(ADA) + len(BOB):
            assert time.monotonic() < deadline, "the worker never ingested the turns"
            await asyncio.sleep(0.25)

        followed: list[dict[str, Any]] = []

        async def follow() -> None:
            async for context in ada.contexts("ada"):
                followed.append(context)

        follower = asyncio.create_task(follow())
        answer: dict[str, Any] = {}
        for _ in range(40):  # until the view holds her memory
            answer = await ada.ask("Where did I move?", user_id="ada", session_id="cli")
            if any("Berlin" in item["text"] for item in answer["items"]):
                break
            await asyncio.sleep(0.5)
        assert any("Berlin" in item["text"] for item in answer["items"]), answer
        both = await asyncio.gather(
            ada.ask("What do I work on?", user_id="ada", session_id="cli"),
            bob.ask("What am I learning?", user_id="bob", session_id="cli"),
        )
        assert any("ledger" in item["text"] for item in both[0]["items"])
        assert any("cello" in item["text"] for item in both[1]["items"])
        await asyncio.sleep(1.0)
        follower.cancel()
        assert followed and {c["user_id"] for c in followed} == {"ada"}
        assert both[0]["request_id"] in {c["request_id"] for c in followed}
        await ada.publish_policy(POLICY, instance="user:ada", author="ada")
        for _ in range(40):  # until the view holds it: then every compile of hers pins it first
            first = (await ada.ask("What is my cat called?", user_id="ada", session_id="p"))["items"][0]
            if first["text"] == POLICY:
                break
            await asyncio.sleep(0.5)
        assert first["text"] == POLICY and first["pinned"]


def test_the_client_round_trip(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    fast = {"fetch.wait.max.ms": 20}
    ada = ClientConfig(config.bootstrap_servers, token("user:ada"), unique_name, consumer_settings=fast)
    bob = ClientConfig(config.bootstrap_servers, token("user:bob"), unique_name, consumer_settings=fast)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        asyncio.run(scenario(ada, bob, worker))
