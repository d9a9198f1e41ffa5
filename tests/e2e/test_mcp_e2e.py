"""Issue 48 (item 11), end to end: an agent host launches `engram mcp` and calls its tools over stdio.

The `mcp` client starts the installed ``engram mcp`` as a subprocess, as an agent host would from
examples/mcp/engram.mcp.json, with Ada's token in ``ENGRAM_TOKEN`` and the stack's settings in the
environment (no flag); a worker with a token key runs on the same topics. Through the tools: turns published
(``publish_turn``) are ingested and come back in a compiled context (``ask``); the facts they state
are listed, searched, and one shows the value it replaced (``fact_history``); the TOC holds the
episodes; a graph query finds a turn. With Ada's token, asking for Bob's memory or browsing his TOC
is refused with the reason, as a tool error the agent reads, not a timeout.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult, TextContent

from engram.infra.config import StackInfo
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, log_tail, metric_value
from tests.e2e.support import standin_config
from tests.e2e.test_trust_e2e import SECRET, token

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp" / "engram.mcp.json"
SCRIPTS = Path(sys.executable).parent  # where `pip install` put the `engram` console script
TURNS = ["I work at Meta.", "I live in Menlo Park.", "I just started a new job at Google in Mountain View."]
TOOLS = {"ask", "publish_turn", "facts_list", "facts_search", "fact_history", "toc", "graph_query"}


def server(config: EngramConfig, prefix: str, tok: str) -> StdioServerParameters:
    """`engram mcp` as an agent host starts it from examples/mcp/engram.mcp.json: its command and
    arguments, its variables filled in (the token, the data folder), and this test's broker, topics
    and worker port (on `engram up`'s stack, the data folder's stack.json and the defaults give those)."""
    example = json.loads(EXAMPLE.read_text(encoding="utf-8"))["mcpServers"]["engram"]
    assert set(example["env"]) == {"ENGRAM_TOKEN", "ENGRAM_DATA_DIR"}, example
    command = shutil.which(example["command"], path=str(SCRIPTS))
    assert command is not None, f"no {example['command']} in {SCRIPTS}"
    env = {
        "ENGRAM_TOKEN": tok, "ENGRAM_DATA_DIR": str(config.data_dir),
        "ENGRAM_BOOTSTRAP_SERVERS": config.bootstrap_servers, "ENGRAM_BROKER_PROFILE": "standin",
        "ENGRAM_TOPIC_PREFIX": prefix, "ENGRAM_WEB_HOST": config.web_host, "ENGRAM_WEB_PORT": str(config.web_port),
    }  # fmt: skip
    return StdioServerParameters(command=command, args=[*example["args"], "--timeout", "20"], env=env)


def text(result: CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, TextContent))


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {text(result)}"
    content: dict[str, Any] | None = result.structured_content
    assert content is not None
    return content


async def until(
    client: Client, tool: str, arguments: dict[str, Any], done: Callable[[dict[str, Any]], object], what: str
) -> dict[str, Any]:
    """Call ``tool`` until ``done(answer)``: the worker applies what it ingests a moment later."""
    deadline = time.monotonic() + 60
    while True:
        answer = await call(client, tool, arguments)
        if done(answer):
            return answer
        assert time.monotonic() < deadline, f"{what}: {answer}"
        await asyncio.sleep(0.5)


async def scenario(params: StdioServerParameters, errlog: TextIO, worker: WorkerProcess, topic: str) -> None:
    async with Client(stdio_client(params, errlog=errlog)) as engram:
        assert {tool.name for tool in (await engram.list_tools()).tools} >= TOOLS
        for content in TURNS:
            sent = await call(engram, "publish_turn", {"content": content, "session": "s1"})
            assert sent["user_id"] == "ada" and sent["turn_id"].startswith("s1-")  # the token's user
        deadline = time.monotonic() + 60
        while metric_value(worker.scrape() or "", "engram_ingest_messages_total", {"topic": topic}) < len(TURNS):
            assert time.monotonic() < deadline, "the worker never ingested the published turns"
            await asyncio.sleep(0.25)

        new_job = "new job at Google"
        asked = await until(engram, "ask", {"query": "Where do I work now?"}, lambda a: new_job in a["context"],
                            "no context with the new job")  # fmt: skip
        turn = next(item for item in asked["items"] if new_job in item["text"])
        assert turn["provenance"] and all(ref.count("/") >= 2 for ref in turn["provenance"]), turn  # topic/p/offset
        facts = await until(engram, "facts_list", {}, lambda a: {"works_at", "lives_in"} <= {
            f["relation"] for f in a["facts"]}, "the facts never showed")  # fmt: skip
        job = next(f for f in facts["facts"] if f["relation"] == "works_at")
        assert job["value"] == "Google" and job["corrects"] and job["source_event_ids"]
        found = await call(engram, "facts_search", {"query": "google"})
        assert [f["fact_id"] for f in found["facts"]] == [job["fact_id"]]
        history = await until(engram, "fact_history", {"fact_id": job["fact_id"]},
                              lambda a: a["facts"][job["fact_id"]]["replaced"], "no history")  # fmt: skip
        assert [old["value"] for old in history["facts"][job["fact_id"]]["replaced"]] == ["Meta"]
        assert "Google" in history["turns"][job["source_event_ids"][0]]["text"]

        toc = await until(engram, "toc", {"depth": 5}, lambda a: a["episodes"] == len(TURNS), "the TOC")
        assert toc["user"] == "ada" and toc["periods"]
        query = await call(engram, "graph_query", {"query_type": "bm25", "params": {"text": "Menlo Park"}})
        assert any("Menlo Park" in node_text for node_text in query["node_texts"].values()), query

        refused = await engram.call_tool("ask", {"query": "Where does Bob live?", "user": "bob"})
        assert refused.is_error and "unauthorized" in text(refused)
        refused = await engram.call_tool("toc", {"user": "bob"})
        assert refused.is_error and "only user ada's" in text(refused)


def test_an_agent_reaches_memory_through_engram_mcp(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    log = tmp_path / "mcp.log"
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker, log.open("w") as errlog:
        try:
            asyncio.run(scenario(server(config, unique_name, token("user:ada")), errlog, worker, config.topics.turns))
        except BaseException:
            errlog.flush()
            print(f"engram mcp's stderr:\n{log_tail(log, 40)}")
            raise
