"""The facts API's reads on the worker's web port (seed 003 §V.C), behind the same gate as requests.

    GET /facts?user=U[&search=WORDS][&category=C][&horizon=long_term|short_term][&limit=N][&offset=N]
    GET /facts/summary?user=U

With a token key configured, the caller sends ``Authorization: Bearer <token>``; its principal must
be the user, or read that user (``reader_of user:U``), else 403 with the reason. The facts come
from this worker's facts table, which holds the users whose partitions it owns; for another user
the answer says so (``owned: false``) rather than claiming there are none. Answers are JSON.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from faust.types import AppT

from processors.facts.listing import FactQuery, FactQueryError, list_facts, summary
from processors.trust.authorize import AuthorizationError, Gate
from streams.commit import JsonState
from streams.steps import facts_state


def _bearer(request: Any) -> str | None:
    header = str(request.headers.get("Authorization", ""))
    return header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else None


def _query(params: Mapping[str, str]) -> FactQuery:
    try:
        limit, offset = int(params.get("limit", "100")), int(params.get("offset", "0"))
    except ValueError as exc:
        raise FactQueryError(str(exc)) from exc
    return FactQuery(params.get("search", ""), params.get("category") or None, params.get("horizon") or None,
                     limit, offset)  # fmt: skip


def register_facts_api(app: AppT, table: Mapping[str, JsonState], gate: Gate) -> None:
    def authorized(web: Any, request: Any) -> tuple[str | None, Any]:
        """The asked user, or the error answer."""
        user = request.query.get("user", "")
        if not user:
            return None, web.json({"error": "the user parameter is required"}, status=400)
        try:
            gate.access(user, _bearer(request), ["USER"], int(time.time()))
        except AuthorizationError as exc:
            return None, web.json({"error": str(exc)}, status=403)
        return user, None

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
