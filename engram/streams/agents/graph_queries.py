"""The graph query path: engram.graph.requests → GraphAnswer on engram.graph.answers.

Seed 004's queries (processors/graph/engine.py) run on the worker that owns the asking user's
memory, over a `GraphEngine` the compile path's `ContextService` feeds with the same MemoryEvents
as its view (on the compile thread, where queries run too, so a query never sees a half-applied
batch). The path is built like the context-request path (streams/agents/compile.py): its own
`RequestReader` on the graph request partitions numbered like the engram.memory partitions
assigned here, one `RequestPath` that answers each request in order, archives the requests in the
event log and commits the reader's offsets only once the answers are delivered.

- A request that cannot be decoded or is invalid (unknown query type, params that are not a JSON
  object, an apply that is not a consolidation) is dead-lettered with its reason at admission; an
  invalid one, or one the gate refuses, is also answered ``ok: false`` with the reason when its
  requester is known (processors/trust/refusals.py).
- A valid request the engine refuses (a node the principal cannot see, a bad parameter value) is
  answered with ``ok: false`` and the error: the asker learns why at once, and the request itself
  stays in the event log.
- A failure of the engine itself is both: dead-lettered with its reason and answered as an error.
- An applied consolidation's MemoryEvents go to engram.memory with the answer, in the same commit,
  keyed by the user; their ids come from the request's offset, so an answer sent again after a
  restart writes the same events, which every sink applies once.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any

from faust.types import AppT

from engram.processors.graph.apply import ApplyContext
from engram.processors.graph.engine import Answer as EngineAnswer
from engram.processors.graph.engine import GraphEngine, GraphQuery
from engram.processors.graph.results import to_json
from engram.processors.graph.types import Principal, QueryError
from engram.processors.intake import Rejected
from engram.processors.trust.refusals import refused_graph_answer
from engram.schemas.record import RawRecord
from engram.schemas.records import GraphAnswer, GraphRequest
from engram.streams.agents.answering import Answer, Deliveries, RequestPath, serve_path
from engram.streams.agents.authorized import authorize, refusal_replies
from engram.streams.agents.compile import ContextService
from engram.streams.agents.requests import RequestReader
from engram.streams.codecs import Codec
from engram.streams.commit import CommitTargets, Output
from engram.streams.edge import Admission


@dataclass
class GraphQueryService:
    """Answers one graph request at a time on the compile path's thread."""

    engine: GraphEngine
    context: ContextService  # its compile thread, producer, metrics and dead-letter topic
    answers_topic: str
    request_codec: Codec
    answer_codec: Codec

    @cached_property
    def admission(self) -> Admission[GraphRequest]:
        c = self.context
        names = (self.request_codec, "GraphRequest", "graph", c.deadletter_topic, c.deadletter_codec, c.metrics)
        return Admission(*names)

    async def answer(self, record: RawRecord, received_s: float = 0.0) -> Answer:
        admitted = self.admission.admit([record])
        if not admitted.accepted:
            return Answer([*await self.refusals(admitted.rejected), *admitted.dead])
        gated = authorize(self.context.gate, self.admission, record, admitted.accepted[0].value, "graph",
                          self.request_codec, self.answers_topic)  # fmt: skip
        if gated.request is None:
            told = await self.refusals([gated.verdict] if gated.verdict else [])
            return Answer([*told, *([gated.refusal] if gated.refusal else [])], archived=gated.archived)
        request = gated.request
        reply_to = request.get("reply_topic") or self.answers_topic
        await self.deliverable(reply_to)
        started = time.perf_counter()
        outputs: list[Output] = []
        result: EngineAnswer | Exception
        nodes, texts = 0, dict[str, str]()
        try:
            run = partial(self._run, request, ApplyContext(request["user_id"], request["event_time_ms"], [record.ref]))
            result, nodes, texts = await self.context.on_compile_thread(run)
        except QueryError as exc:
            result = exc
        except Exception as exc:  # one failing query never stops the path: dead-lettered and answered
            verdict = Rejected("processing", f"graph query failed: {type(exc).__name__}: {exc}", type(exc).__name__)
            outputs.append(self.admission.dead_letter(gated.archived or record, verdict, "graph"))
            result = exc
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        reply = graph_answer(request, result, nodes, elapsed_ms, texts)
        key = request["user_id"].encode()
        outputs.insert(0, Output(reply_to, key, self.answer_codec.encode(reply)))
        if isinstance(result, EngineAnswer):
            memory = self.context.memory_codec
            outputs.extend(Output(self.context.memory_topic, key, memory.encode(e)) for e in result.events)
        return Answer(outputs, archived=gated.archived)

    async def refusals(self, verdicts: Sequence[Rejected]) -> list[Output]:
        """A refused or invalid request's answer to its known requester (streams/agents/authorized.py)."""

        def reply(request: Mapping[str, Any], code: str, reason: str) -> bytes:
            return bytes(self.answer_codec.encode(refused_graph_answer(request, code, reason)))

        gate, answers, ensure = self.context.gate, self.answers_topic, self.deliverable
        return await refusal_replies(gate, answers, verdicts, "query_id", reply, ensure)

    async def deliverable(self, topic: str) -> None:
        """Make sure an answer topic other than the shared one exists (streams/delivery.py)."""
        if topic != self.answers_topic and self.context.reply_topics is not None:
            await self.context.reply_topics.ensure(topic)

    def _run(self, request: GraphRequest, ctx: ApplyContext) -> tuple[EngineAnswer, int, dict[str, str]]:
        """On the compile thread: the engine's answer, how many nodes the principal sees, and the
        start of the text of each node the answer names."""
        principal = Principal.of(request["user_id"], request["authorized_layers"], request.get("instances"))
        query = GraphQuery(request["query_type"], json.loads(request["params_json"]))
        answer = self.engine.answer(principal, query, ctx if request["apply"] else None)
        texts = self.engine.previews(principal, to_json(answer.result))
        return answer, self.engine.subgraph(principal).n, texts


def graph_answer(
    request: GraphRequest, result: EngineAnswer | Exception, nodes: int, elapsed_ms: float,
    texts: dict[str, str] | None = None,
) -> GraphAnswer:  # fmt: skip
    ok = isinstance(result, EngineAnswer)
    body: dict[str, Any] = to_json(result.result) if isinstance(result, EngineAnswer) else {}
    return {
        "query_id": request["query_id"],
        "user_id": request["user_id"],
        "query_type": request["query_type"],
        "ok": ok,
        "error": None if ok else str(result),
        "result_json": json.dumps(body, sort_keys=True),
        "nodes": nodes,
        "events": len(result.events) if isinstance(result, EngineAnswer) else 0,
        "elapsed_ms": elapsed_ms,
        "node_texts": dict(texts or {}),
    }


def register_graph_path(
    app: AppT, service: GraphQueryService, reader: RequestReader, targets: CommitTargets, memory_topic: str
) -> RequestPath:
    """The graph query path: its reader, assigned the graph request partitions numbered like the
    engram.memory partitions Faust assigns here, feeding one `RequestPath`."""
    path = RequestPath(
        service.answer,
        Deliveries(service.context.producer),
        targets,
        lambda offsets: asyncio.to_thread(reader.commit, offsets),
    )
    serve_path(app, path, reader, memory_topic, "engram.graph")
    return path
