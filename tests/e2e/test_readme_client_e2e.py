"""The README's client example, run as written against a worker (issue 18: examples a test runs),
in each codec mode a worker runs in: single-object encoding, and the Confluent wire format through
a schema registry (issue 48; `engram.infra.schema_registry`, which the worker process and the test share).

The README's python block is taken from the README itself; only its last line (``asyncio.run``
with the production broker and a ``token`` variable) is left out, and its functions are called
with this test's broker, topic prefix and token. ``remember_and_ask`` is called until Ada's
context holds what she said (the first ask may come before her turn is ingested), and its policy
comes first, pinned; ``follow`` yields her contexts as they are compiled.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from engram_client import ClientConfig, EngramClient, EngramDecodeError

from engram.infra.config import StackInfo
from engram.infra.schema_registry import schema_registry, subjects
from engram.processors.trust.tokens import TokenConfig, mint
from engram.streams.admin import ensure_topics
from engram.streams.runner import WorkerProcess
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e

README = Path(__file__).resolve().parents[2] / "README.md"
SECRET = "e2e-readme-secret-of-32-bytes-at-least"


def readme_example() -> dict[str, Any]:
    """The README's python block, executed without its last line; returns its names."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert blocks, "the README has no python example"
    code = blocks[0].rstrip().splitlines()
    assert code[-1].startswith("asyncio.run("), "the example should end by running itself"
    names: dict[str, Any] = {}
    exec(compile("\n".join(code[:-1]), "README.md", "exec"), names)  # noqa: S102 - the project's own README
    return names


async def scenario(example: dict[str, Any], config: ClientConfig) -> None:
    follower = asyncio.create_task(example["follow"](config))
    await asyncio.sleep(2.0)  # the follower reads from the end of Ada's topic before she asks
    deadline = time.monotonic() + 60
    while True:
        context = await example["remember_and_ask"](config)
        texts = [item["text"] for item in context["items"]]
        if "I moved to Berlin." in texts and texts[0] == "Answer Ada in German.":
            break
        assert time.monotonic() < deadline, texts
        await asyncio.sleep(0.5)
    assert context["items"][0]["pinned"] and context["user_id"] == "ada"
    await asyncio.sleep(1.0)  # the follower prints the last one too
    follower.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await follower


async def ask_once(config: ClientConfig) -> None:
    async with EngramClient(config) as engram:
        await engram.ask("Where do I live?", user_id="ada", session_id="s1", timeout_s=30)


@contextmanager
def registry_if(wanted: bool) -> Iterator[str | None]:
    with schema_registry() if wanted else nullcontext(None) as url:
        yield url


@pytest.mark.parametrize("registry", [False, True], ids=["single-object", "registry"])
def test_the_readme_client_example_runs(
    stack: StackInfo, tmp_path: Path, unique_name: str, capsys: pytest.CaptureFixture[str], registry: bool
) -> None:
    example = readme_example()
    with registry_if(registry) as url:
        config = standin_config(stack, tmp_path, unique_name, auth_key=SECRET, schema_registry_url=url)
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        token = mint(TokenConfig(SECRET), "user:ada", int(time.time()) + 600)
        client = ClientConfig(config.bootstrap_servers, token, unique_name, consumer_settings={"fetch.wait.max.ms": 20},
                              schema_registry_url=url)  # fmt: skip
        with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name):
            asyncio.run(scenario(example, client))
            if url is not None:  # an app not told of the registry learns so from the answer, at once
                started = time.monotonic()
                with pytest.raises(EngramDecodeError, match="set ClientConfig.schema_registry_url"):
                    asyncio.run(ask_once(replace(client, schema_registry_url=None)))
                assert time.monotonic() - started < 15
        if url is not None:  # the app wrote turns and the worker its answers through the registry
            assert {f"{config.topics.turns}-value", f"{config.topics.compiled}-value"} <= set(subjects(url))
    printed = capsys.readouterr().out
    assert "I moved to Berlin." in printed  # remember_and_ask printed its items
    assert re.search(r"^[0-9a-f-]{36} \[", printed, flags=re.MULTILINE), "follow printed no context"
