"""What each `engram mcp` tool does: one call against the running stack, with the principal's token.

- ask and publish: the client SDK (`EngramClient`), started at the first call and kept (its reply
  consumer then sits at the end of the principal's reply topic, so an ask costs one round trip);
- facts and a fact's history: the worker's facts API (streams/facts_api.py) with the token as its
  bearer, so the worker's gate answers, as it does for the facts page;
- graph queries: a GraphRequest through the broker, as `engram query` sends it;
- the time hierarchy (TOC): folded from the event log on this machine, as `engram toc` reads it.
  The log is read without the worker's gate, so a token only browses its own user's (an open
  stack, with no token, any user's).

The user a tool acts on defaults to ``McpSettings.default_user`` (``--user``, else the token's
``user:ID`` subject). Failures an agent can act on raise `MemoryToolError` with the reason.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from engram_client import ClientConfig, EngramClient, EngramClientError
from engram_client.client import token_subject

from engram.processors.graph.types import QUERY_TYPES
from engram.schemas.records import LAYERS, Layer
from engram.streams.commands.query import graph_request
from engram.streams.commands.toc import load, search, tree
from engram.streams.config import EngramConfig

TOC_LEVELS: Final = 5  # year, month, week, day, segment
# Turn indexes a session's turns are ordered by, when the agent gives none: seconds since this
# epoch (2024-01-01 UTC), so a restarted server goes on after the turns it sent before, within int32.
TURN_INDEX_EPOCH_S: Final = 1_704_067_200


class MemoryToolError(RuntimeError):
    """A call that cannot be answered, with the reason an agent (or its person) can act on."""


@dataclass(frozen=True, slots=True)
class McpSettings:
    """``config``: the stack's (broker, topics, data folder: streams/local.py); ``client``: the
    SDK's, with the token; ``worker_url``: a worker's web address (the facts API);
    ``default_user``: the user a tool acts on when the call names none; ``timeout_s``: how long an
    ask or a graph query waits for its answer."""

    config: EngramConfig
    client: ClientConfig
    worker_url: str
    default_user: str | None = None
    timeout_s: float = 30.0

    @property
    def token(self) -> str | None:
        return self.client.token


def token_user(token: str | None) -> str | None:
    """The user id a ``user:ID`` token names; None without a token or for another principal."""
    if not token:
        return None
    try:
        subject = token_subject(token)
    except EngramClientError:
        return None
    scope, _, ident = subject.partition(":")
    return ident if scope == "user" and ident else None


@dataclass
class TurnIndexes:
    """The next turn index of each session: one more than the last sent, and never less than the
    seconds since `TURN_INDEX_EPOCH_S`, so turns order by when they were sent across restarts."""

    last: dict[str, int] = field(default_factory=dict)

    def next(self, session: str, now_s: float) -> int:
        index = max(self.last.get(session, -1) + 1, int(now_s) - TURN_INDEX_EPOCH_S)
        self.last[session] = index
        return index


class MemoryTools:
    """The tools' calls (see the module docstring). Use ``await close()`` when done."""

    def __init__(self, settings: McpSettings) -> None:
        self.settings = settings
        self._client: EngramClient | None = None
        self._starting = asyncio.Lock()
        self._turns = TurnIndexes()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def _sdk(self) -> EngramClient:
        async with self._starting:
            if self._client is None:
                client = EngramClient(self.settings.client)
                await client.start()
                self._client = client
            return self._client

    def user(self, user: str | None) -> str:
        chosen = user or self.settings.default_user
        if not chosen:
            msg = "no user: name one, or start `engram mcp` with --user or a user:ID token"
            raise MemoryToolError(msg)
        return chosen

    # --- through the SDK -------------------------------------------------------------------------

    async def ask(
        self, query: str, user: str | None, session: str, budget: int, layers: Sequence[str], intent: str | None
    ) -> dict[str, Any]:
        """The compiled context for ``query``: its items in order, each with its provenance, and
        ``context``, their texts one per line."""
        _check_layers(layers)
        user_id = self.user(user)
        client = await self._sdk()
        try:
            compiled = await client.ask(
                query, user_id=user_id, session_id=session, token_budget=budget, layers=tuple(layers),
                intent=intent, timeout_s=self.settings.timeout_s,
            )  # fmt: skip
        except EngramClientError as exc:
            raise MemoryToolError(str(exc)) from exc
        items = [
            {"node_id": i["node_id"], "kind": i["kind"], "text": i["text"], "score": round(i["score"], 4),
             "tokens": i["tokens"], "pinned": i["pinned"], "layer": i["layer"],
             "provenance": [f"{p['topic']}/{p['partition']}/{p['offset']}" for p in i["provenance"]]}
            for i in compiled["items"]
        ]  # fmt: skip
        return {
            "context": "\n".join(item["text"] for item in items),
            "items": items,
            "route": compiled["route"],
            "intent": compiled["intent"],
            "total_tokens": compiled["total_tokens"],
            "token_budget": compiled["token_budget"],
            "partial": compiled["partial"],
            "fallbacks": list(compiled["fallbacks"]),
            "request_id": compiled["request_id"],
        }

    async def publish_turn(
        self, content: str, user: str | None, session: str, role: str, turn_index: int | None
    ) -> dict[str, Any]:
        """Publish one turn; returns once the broker has it."""
        user_id = self.user(user)
        client = await self._sdk()
        index = turn_index if turn_index is not None else self._turns.next(session, time.time())
        try:
            turn_id = await client.publish_turn(user_id=user_id, session_id=session, turn_index=index,
                                                content=content, role=role, agent_id="engram-mcp")  # fmt: skip
        except EngramClientError as exc:
            raise MemoryToolError(str(exc)) from exc
        return {"turn_id": turn_id, "user_id": user_id, "session_id": session, "turn_index": index}

    # --- the worker's facts API ------------------------------------------------------------------

    async def facts(
        self, user: str | None, search: str, category: str | None, horizon: str | None, limit: int
    ) -> dict[str, Any]:
        """The user's active facts, newest first, filtered."""
        params = {"user": self.user(user), "search": search, "category": category or "", "horizon": horizon or "",
                  "limit": str(limit)}  # fmt: skip
        return await self._worker("/facts", params)

    async def fact_history(self, user: str | None, fact_id: str) -> dict[str, Any]:
        """A fact's decisions and the values it replaced, from the worker's event log."""
        return await self._worker("/facts/history", {"user": self.user(user), "fact_id": fact_id})

    async def _worker(self, path: str, params: Mapping[str, str]) -> dict[str, Any]:
        token = self.settings.token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        url = self.settings.worker_url.rstrip("/") + path
        try:
            async with httpx.AsyncClient(timeout=self.settings.timeout_s) as http:
                response = await http.get(url, params=params, headers=headers)
        except httpx.HTTPError as exc:
            msg = (f"no worker answers at {self.settings.worker_url} ({type(exc).__name__}): is `engram worker` "
                   "running? (--worker-url)")  # fmt: skip
            raise MemoryToolError(msg) from exc
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            msg = f"{path}: the worker answered {response.status_code} with no JSON object"
            raise MemoryToolError(msg)
        if response.status_code != httpx.codes.OK:
            msg = f"{path}: {response.status_code}: {answer.get('error', answer)}"
            raise MemoryToolError(msg)
        if answer.get("owned") is False:
            answer["note"] = "this worker does not own the user's partition: ask the worker that does"
        return answer

    # --- through the broker, and the event log ---------------------------------------------------

    async def graph_query(
        self, query_type: str, params: Mapping[str, Any], user: str | None, layers: Sequence[str]
    ) -> dict[str, Any]:
        """One of seed 004's graph queries, answered by a worker's graph engine."""
        from engram.streams.replies import graph_answers

        if query_type not in QUERY_TYPES:
            msg = f"query_type must be one of {', '.join(QUERY_TYPES)}, not {query_type!r}"
            raise MemoryToolError(msg)
        request = graph_request(self.user(user), query_type, params, _check_layers(layers), self.settings.token,
                                int(time.time() * 1000), agent_id="engram-mcp")  # fmt: skip
        answers = await asyncio.to_thread(graph_answers, self.settings.config, [request], self.settings.timeout_s)
        answer = answers.get(request["query_id"])
        if answer is None:
            msg = f"no answer within {self.settings.timeout_s}s: is a worker running with graph queries on?"
            raise MemoryToolError(msg)
        if not answer["ok"]:
            msg = f"{query_type}: {answer['error']}"
            raise MemoryToolError(msg)
        out: dict[str, Any] = {name: value for name, value in answer.items() if name != "result_json"}
        return out | {"result": json.loads(answer["result_json"])}

    async def toc(self, user: str | None, period: str | None, depth: int, query: str | None) -> dict[str, Any]:
        """The user's time hierarchy from ``period`` (every year when None) down ``depth`` levels,
        or, with ``query``, the agentic search over it."""
        who = self.user(user)
        own = token_user(self.settings.token)
        if self.settings.token and who != own:
            msg = (f"the TOC is read from the event log without the worker's gate: this token may browse only "
                   f"{'user ' + own if own else 'no user'}'s")  # fmt: skip
            raise MemoryToolError(msg)
        config = self.settings.config
        if not config.eventlog_dir.is_dir():
            msg = f"no event log at {config.eventlog_dir} (ENGRAM_DATA_DIR: the worker's data folder)"
            raise MemoryToolError(msg)
        return await asyncio.to_thread(self._toc, who, period, depth, query)

    def _toc(self, user: str, period: str | None, depth: int, query: str | None) -> dict[str, Any]:
        config = self.settings.config
        index, said = load(config.eventlog_dir, config.topics.memory, user, config.schema_registry_url)
        if period is not None and period not in index.periods:
            msg = f"no period {period!r} in {user}'s memory"
            raise MemoryToolError(msg)
        if query:
            return {"user": user, **search(index, said, query)}
        levels = max(1, min(depth, TOC_LEVELS))
        return {"user": user, "episodes": len(said), "periods": tree(index, said, period, levels)}


def _check_layers(layers: Sequence[str]) -> list[Layer]:
    chosen: list[Layer] = []
    for layer in layers:
        if layer not in LAYERS:
            msg = f"layers must be among {', '.join(LAYERS)}, not {layer!r}"
            raise MemoryToolError(msg)
        chosen.append(LAYERS[LAYERS.index(layer)])
    return chosen
