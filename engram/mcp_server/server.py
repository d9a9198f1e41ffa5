"""The MCP server: Engram's memory as tools, over stdio (what agent hosts launch).

Each tool is a thin call into `MemoryTools` (mcp_server/access.py); what it cannot answer comes
back as a tool error with the reason (``is_error``), never a crash of the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from engram.mcp_server.access import MemoryToolError, MemoryTools

INSTRUCTIONS = """Engram is this agent's long-term memory. Call `ask` before answering anything that
may depend on what the user said before: it returns a compiled, token-budgeted context (most relevant
first, with provenance). Call `publish_turn` with each user message (and your replies, role
"assistant") so that memory keeps up. `facts_list` / `facts_search` show what Engram believes about the
user now, `fact_history` what a fact replaced, `toc` the conversation history by period, and
`graph_query` runs typed queries over the memory graph (traversal, bm25, pagerank, resolve, ...)."""

T = TypeVar("T")
User = Annotated[str | None, Field(description="whose memory (default: the server's user, from --user or the token)")]
LayerName = Literal["SYSTEM", "ORGANIZATION", "TEAM", "USER"]
Layers = Annotated[Sequence[LayerName], Field(description="memory layers to read (the worker checks the token may)")]


async def answered(call: Awaitable[T]) -> T:
    """The call's result; its `MemoryToolError` as the tool's error (the reason reaches the agent)."""
    try:
        return await call
    except MemoryToolError as exc:
        raise ToolError(str(exc)) from exc


def build_server(tools: MemoryTools) -> MCPServer[None]:
    """The MCP server over ``tools``; the SDK client it opens is closed when the server stops."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[None]) -> AsyncIterator[None]:
        try:
            yield None
        finally:
            await tools.close()

    server: MCPServer[None] = MCPServer("engram", instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool()
    async def ask(
        query: Annotated[str, Field(description="what the agent needs to know")],
        user: User = None,
        session: Annotated[str, Field(description="the conversation's session id")] = "mcp",
        budget: Annotated[int, Field(description="token budget (cl100k tokens)", ge=1)] = 1000,
        layers: Layers = ("USER",),
        intent: Annotated[str | None, Field(description="explore | answer | locate | time-boxed")] = None,
    ) -> dict[str, Any]:
        """Ask Engram for a compiled context: the memory most relevant to the query, ordered and cut to the token
        budget; `context` is its text, `items` each piece with provenance."""
        return await answered(tools.ask(query, user, session, budget, layers, intent))

    @server.tool()
    async def publish_turn(
        content: Annotated[str, Field(description="the turn's text")],
        user: User = None,
        session: Annotated[str, Field(description="the conversation's session id")] = "mcp",
        role: Literal["user", "assistant", "tool", "system"] = "user",
        turn_index: Annotated[
            int | None, Field(description="position in the session (default: in the order sent)", ge=0)
        ] = None,
    ) -> dict[str, Any]:
        """Publish one conversation turn into Engram's memory (returns once the broker has it)."""
        return await answered(tools.publish_turn(content, user, session, role, turn_index))

    @server.tool()
    async def facts_list(
        user: User = None,
        category: Annotated[str | None, Field(description="personal, preference, task, skill, ...")] = None,
        horizon: Literal["long_term", "short_term"] | None = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 100,
    ) -> dict[str, Any]:
        """List what Engram believes about the user now (active facts, newest first), with category, horizon,
        confidence, when stated and the source turns."""
        return await answered(tools.facts(user, "", category, horizon, limit))

    @server.tool()
    async def facts_search(
        query: Annotated[str, Field(description="words to find")],
        user: User = None,
        limit: Annotated[int, Field(ge=1, le=1000)] = 20,
    ) -> dict[str, Any]:
        """Search the user's active facts: every word must occur in the subject, relation or value."""
        return await answered(tools.facts(user, query, None, None, limit))

    @server.tool()
    async def fact_history(
        fact_id: Annotated[str, Field(description="a fact id from facts_list or facts_search")],
        user: User = None,
    ) -> dict[str, Any]:
        """A fact's history: every decision on it (rule and reason) and the earlier values it replaced, newest first,
        each with when it was stated and its source turns."""
        return await answered(tools.fact_history(user, fact_id))

    @server.tool()
    async def toc(
        user: User = None,
        period: Annotated[str | None, Field(description="start at this period (2024, 2024-05, 2024-05-08)")] = None,
        depth: Annotated[int, Field(description="levels below the start", ge=1, le=5)] = 2,
        query: Annotated[str | None, Field(description="search instead of browsing")] = None,
    ) -> dict[str, Any]:
        """Browse the user's conversation history by time (year > month > week > day > segment, each with counts and a
        summary), or search it with `query` ('what did we say last week about the trip')."""
        return await answered(tools.toc(user, period, depth, query))

    @server.tool()
    async def graph_query(
        query_type: Annotated[str, Field(description="the query type")],
        params: Annotated[dict[str, Any] | None, Field(description="the query's parameters")] = None,
        user: User = None,
        layers: Layers = ("USER",),
    ) -> dict[str, Any]:
        """Run one of the memory graph's typed queries: traversal, pattern, temporal, similarity, resolve, bm25,
        hybrid, pagerank, degree, betweenness, bfs, dijkstra, revise, gaps, analogy, consolidate (dry run), drift.
        `params` as `engram query --help` lists them, e.g. {"text": "ledger", "limit": 5} for bm25."""
        return await answered(tools.graph_query(query_type, params or {}, user, layers))

    return server
