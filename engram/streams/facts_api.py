"""The facts API on the worker's web port (seed 003 §V.C), behind the same gate as requests.

    GET /facts?user=U[&search=WORDS][&category=C][&horizon=long_term|short_term][&limit=N][&offset=N]
    GET /facts/summary?user=U
    GET /facts/history?user=U&fact_id=F[,F2…]   each fact's decisions, what it replaced, its source turns
    GET /facts/ui[?user=U]     the facts page: lists, filters, edits, deletes and clears through the above
    POST /facts/edit?user=U    {"fact_id": ..., "value": ..., "reason": ...}
    POST /facts/delete?user=U  {"fact_id": ..., "reason": ...}
    POST /facts/clear?user=U   {"category": ..., "horizon": ..., "search": ..., "reason": ...}

A change is a `FactDecided` MemoryEvent with the editor and the reason (processors/facts/edits.py),
published on engram.memory: the facts step, the view and the stores apply it as they apply the
rules' decisions, and a replay of the log reproduces it. The answer (202) lists the events; the
listing shows the change once the user's partition has applied it. Changing needs what writing
into the user's memory needs (`Gate.check_write`); reading, what reading it needs.

With a token key configured, the caller sends ``Authorization: Bearer <token>``; its principal must
be the user, or read that user (``reader_of user:U``), else 403 with the reason. The facts come
from this worker's facts table, which holds the users whose partitions it owns; for another user
the answer says so (``owned: false``) rather than claiming there are none. Answers are JSON.

A history is folded from this worker's event log (processors/fact_history.py), off the loop and
within `HISTORY_DEADLINE_S` (504 past it): the log is where replaced values and the source turns'
texts live; the facts table holds only what is true now.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from importlib import resources
from typing import Any, Final

from faust.types import AppT
from faust.web import View

from engram.processors.fact_history import FactLog, histories
from engram.processors.facts.edits import Editor, FactEditError, clear_facts, delete_fact, edit_fact
from engram.processors.facts.listing import FactQuery, FactQueryError, list_facts, summary
from engram.processors.facts.model import UserFacts
from engram.processors.trust.authorize import AuthorizationError, Gate
from engram.schemas.codec import CodecError
from engram.schemas.records import MemoryEvent
from engram.streams.codecs import Codec
from engram.streams.commit import JsonState
from engram.streams.config import EngramConfig
from engram.streams.metrics import EngramMetrics
from engram.streams.output import EventProducer
from engram.streams.sealing import eventlog_reader
from engram.streams.steps import facts_state

HISTORY_DEADLINE_S: Final = 10.0
MAX_HISTORY_FACTS: Final = 200


def _bearer(request: Any) -> str | None:
    header = str(request.headers.get("Authorization", ""))
    return header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else None


def _whole_number(params: Mapping[str, str], name: str, default: int) -> int:
    """A query parameter that must be a whole number (raises `FactQueryError` saying so)."""
    text = params.get(name, str(default)).strip()
    if not re.fullmatch(r"-?[0-9]{1,18}", text):
        msg = f"{name} must be a whole number, not {text[:40]!r}"
        raise FactQueryError(msg)
    return int(text)


def _query(params: Mapping[str, str]) -> FactQuery:
    limit, offset = _whole_number(params, "limit", 100), _whole_number(params, "offset", 0)
    return FactQuery(params.get("search", ""), params.get("category") or None, params.get("horizon") or None,
                     limit, offset)  # fmt: skip


def register_facts_api(
    app: AppT, table: Mapping[str, JsonState], gate: Gate, publish: Publish | None = None,
    metrics: EngramMetrics | None = None, fact_log: ReadFactLog | None = None,
) -> None:  # fmt: skip
    def authorized(web: Any, request: Any, *, write: bool = False) -> tuple[str | None, Any]:
        """The asked user, or the error answer."""
        user = request.query.get("user", "")
        if not user:
            return None, web.json({"error": "the user parameter is required"}, status=400)
        try:
            if write:
                gate.check_write(_bearer(request), "USER", user, None, int(time.time()))
            else:
                gate.access(user, _bearer(request), ["USER"], int(time.time()))
        except AuthorizationError as exc:
            if metrics is not None:
                metrics.authorization_denials.labels("facts").inc()
            return None, web.json({"error": str(exc)}, status=403)
        return user, None

    if publish is not None:
        register_fact_changes(app, table, authorized, publish, gate)
    if fact_log is not None:
        register_fact_history(app, authorized, fact_log)

    @app.page("/facts/ui")
    async def facts_ui(web: Any, request: Any) -> Any:
        """The facts page: the same API, called from the browser with the token the person gives."""
        page = resources.files("engram.streams").joinpath("facts.html").read_text(encoding="utf-8")
        return web.html(page)

    @app.page("/facts")
    async def facts_page(web: Any, request: Any) -> Any:
        user, refusal = authorized(web, request)
        if user is None:
            return refusal
        try:
            query = _query(request.query)
        except FactQueryError as exc:
            return web.json({"error": str(exc)}, status=400)
        data = table.get(user)
        facts, total = list_facts(facts_state(data, user)[0], query)
        return web.json({"user": user, "owned": data is not None, "total": total, "facts": facts})

    @app.page("/facts/summary")
    async def facts_summary_page(web: Any, request: Any) -> Any:
        user, refusal = authorized(web, request)
        if user is None:
            return refusal
        data = table.get(user)
        return web.json({"user": user, "owned": data is not None, **summary(facts_state(data, user)[0])})


Publish = Callable[[Sequence[MemoryEvent]], Awaitable[None]]
ReadFactLog = Callable[[str], Awaitable[FactLog]]


def logged_fact_log(config: EngramConfig, codec: Codec) -> ReadFactLog:
    """Folds a user's MemoryEvents from the worker's event log into a `FactLog`, on a thread.

    Only the user's records (keyed by user) are decoded; what cannot be decoded was dead-lettered
    when it was stored, and is skipped."""

    def read(user: str) -> FactLog:
        key, log = user.encode(), FactLog(user)
        reader = eventlog_reader(config)
        if config.topics.memory not in reader.topics():
            return log
        for logged in reader.read([config.topics.memory]):
            if logged["key"] != key:
                continue
            try:
                log.add(codec.decode(logged["value"] or b""))
            except CodecError:
                continue
        return log

    async def fold(user: str) -> FactLog:
        return await asyncio.to_thread(read, user)

    return fold


def register_fact_history(app: AppT, authorized: Authorize, fact_log: ReadFactLog) -> None:
    @app.page("/facts/history")
    async def fact_history_page(web: Any, request: Any) -> Any:
        """Each asked fact's decisions and the versions it replaced, with their source turns."""
        user, refusal = authorized(web, request)
        if user is None:
            return refusal
        asked = [f for f in re.split(r"[,\s]+", request.query.get("fact_id", "")) if f]
        if not asked or len(asked) > MAX_HISTORY_FACTS:
            return web.json({"error": f"fact_id must name 1..{MAX_HISTORY_FACTS} facts (comma-separated)"},
                            status=400)  # fmt: skip
        try:
            log = await asyncio.wait_for(fact_log(user), HISTORY_DEADLINE_S)
        except TimeoutError:
            return web.json({"error": f"the event log was not read within {HISTORY_DEADLINE_S:.0f} s"}, status=504)
        return web.json({"user": user, **histories(log, asked)})


def memory_publisher(bootstrap: str, topic: str, codec: Codec) -> Publish:
    """Publishes the facts API's events on engram.memory, keyed by user, with a producer of its own
    (a person's edit waits for its own delivery, not for an ingest batch's)."""
    producer = EventProducer(bootstrap, linger_ms=0)

    async def publish(events: Sequence[MemoryEvent]) -> None:
        for event in events:
            producer.send(topic, event["key"].encode(), codec.encode(event))
        await producer.flush()

    return publish


Authorize = Callable[..., tuple[str | None, Any]]
CHANGES: Final = ("edit", "delete", "clear")


def editor_of(gate: Gate, request: Any, body: Mapping[str, Any]) -> Editor:
    """Who changes (the token's principal; ``anonymous`` on an open worker) and why."""
    token = _bearer(request)
    principal = gate.verifier.principal(token, int(time.time())) if gate.verifier is not None else "anonymous"
    return Editor(principal, str(body.get("reason", ""))[:500], int(time.time() * 1000))


def changes(action: str, facts: UserFacts, body: Mapping[str, Any], editor: Editor) -> list[MemoryEvent]:
    """The events of one change (raises `FactEditError` or `FactQueryError` for a bad one)."""
    if action == "edit":
        return [edit_fact(facts, str(body.get("fact_id", "")), str(body.get("value", "")), editor)]
    if action == "delete":
        return [delete_fact(facts, str(body.get("fact_id", "")), editor)]
    scope = FactQuery(str(body.get("search", "")), body.get("category") or None, body.get("horizon") or None)
    return clear_facts(facts, scope, editor)


async def json_object(request: Any) -> Mapping[str, Any]:
    """The request's body, which must be a JSON object (raises `ValueError` otherwise)."""
    body = await request.json()
    if not isinstance(body, dict):
        msg = "the body must be a JSON object"
        raise FactEditError(msg)
    return body


def register_fact_changes(app: AppT, table: Mapping[str, JsonState], authorized: Authorize, publish: Publish,
                          gate: Gate) -> None:  # fmt: skip
    def view(action: str) -> type[View]:
        class Change(View):
            async def post(self, request: Any) -> Any:
                user, refusal = authorized(self, request, write=True)
                if user is None:
                    return refusal
                try:
                    body = await json_object(request)
                    facts = facts_state(table.get(user), user)[0]
                    events = changes(action, facts, body, editor_of(gate, request, body))
                except (ValueError, FactEditError, FactQueryError) as exc:
                    return self.json({"error": str(exc)}, status=400)
                await publish(events)
                return self.json({"user": user, "events": [e["event_id"] for e in events]}, status=202)

        return Change

    for action in CHANGES:
        app.page(f"/facts/{action}")(view(action))
