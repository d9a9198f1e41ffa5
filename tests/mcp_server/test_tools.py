"""`engram mcp` without a broker (the e2e test drives it through one): what it tells an agent, in
process through the `mcp` client, when a call cannot be answered, and what it tells a person
whose install lacks the `mcp` package."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest
from engram_client import ClientConfig
from mcp import Client

from engram.mcp_server.access import TURN_INDEX_EPOCH_S, McpSettings, MemoryTools, TurnIndexes, token_user
from engram.mcp_server.server import build_server
from engram.processors.trust.tokens import TokenConfig, mint
from engram.streams.cli import main
from engram.streams.config import EngramConfig

ADA = mint(TokenConfig("unit-test-secret-of-32-bytes-at-least"), "user:ada", int(time.time()) + 600)


def tools(tmp_path: Path, token: str | None = ADA, user: str | None = None) -> MemoryTools:
    """Nothing listens on port 1: a call that reaches for the stack fails with the reason."""
    config = EngramConfig(bootstrap_servers="127.0.0.1:1", data_dir=tmp_path)
    client = ClientConfig("127.0.0.1:1", token=token)
    return MemoryTools(McpSettings(config, client, "http://127.0.0.1:1", user or token_user(token), timeout_s=2.0))


async def errors(memory: MemoryTools, calls: list[tuple[str, dict[str, object]]]) -> list[str]:
    async with Client(build_server(memory)) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert listed == {"ask", "publish_turn", "facts_list", "facts_search", "fact_history", "toc", "graph_query"}
        out = []
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, result)
            out.append(" ".join(getattr(block, "text", "") for block in result.content))
        return out


def test_what_cannot_be_answered_comes_back_as_a_tool_error_with_the_reason(tmp_path: Path) -> None:
    found = asyncio.run(errors(tools(tmp_path), [
        ("toc", {"user": "bob"}),
        ("toc", {}),
        ("facts_list", {}),
        ("graph_query", {"query_type": "shortest"}),
        ("ask", {"query": "q", "layers": ["GALAXY"]}),
    ]))  # fmt: skip
    assert "this token may browse only user ada's" in found[0]  # the log is read without the gate
    assert f"no event log at {tmp_path / 'eventlog'}" in found[1]
    assert "no worker answers at http://127.0.0.1:1" in found[2] and "engram worker" in found[2]
    assert "query_type must be one of traversal" in found[3]
    assert "GALAXY" in found[4]
    [anonymous] = asyncio.run(errors(tools(tmp_path, token=None), [("facts_search", {"query": "berlin"})]))
    assert "no user: name one, or start `engram mcp` with --user or a user:ID token" in anonymous


def test_the_default_user_and_turn_order() -> None:
    assert token_user(ADA) == "ada" and token_user(None) is None and token_user("not-a-jwt") is None
    turns, now = TurnIndexes(), TURN_INDEX_EPOCH_S + 1_000.5
    assert [turns.next("s", now), turns.next("s", now), turns.next("t", now)] == [1_000, 1_001, 1_000]
    assert TurnIndexes().next("s", now + 5) == 1_005  # a restarted server goes on after what it sent
    assert TurnIndexes().next("s", time.time()) < 2**31


def test_without_the_mcp_package_engram_mcp_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ModuleNotFoundError
    for name in [m for m in sys.modules if m.startswith(("engram.mcp_server", "mcp."))]:
        monkeypatch.delitem(sys.modules, name)
    assert main(["mcp"]) == 2
    assert "pip install -e '.[mcp]'" in capsys.readouterr().err
