"""TraceBuilder: conversation turns and code changes in, MemoryEvents out (pure, no I/O).

Nodes
- One ``event`` node per turn (V_user for role ``user``, V_system otherwise; the role is in its
  properties), id ``event_node_id(user_id, turn_id)``, with embedding, event time, cl100k token
  count, the turn's metadata, and the date its text states ("yesterday" resolved against its event
  time: ``event_date``/``event_span``, see ``processors.timeline``).
- ``concept`` nodes from the user's ``Atlas`` (see ``atlas.py``), republished when founded and at
  2, 4, 8, ... members; CHILD_OF edges child -> parent between Atlas levels.
- ``code_file`` nodes for CodeChanges (``apply_code_batch``), joined to the DAG by CAUSAL edges.

Edges (src -> dst)
- NEXT prev -> turn, per session, over the total order ``(turn_index, node_id)``.
- CAUSAL cause -> effect: (1) ``causal_parent_ids`` are turn ids of the same user; (2) a tool turn
  carries ``metadata["tool_call_id"]`` equal to a ``tool_calls[].call_id`` of an earlier turn, which
  caused it (a result that arrives before its call is linked when the call arrives); (3) an
  assistant turn without explicit parents is caused by the user turn it answers, the nearest
  earlier user turn of its session.
- REF turn -> concept when sim > tau_ref (up to ``max_refs``), weight = the similarity, measured
  after removing the user's running mean embedding (see ``atlas.py``); a turn that founds a
  concept REFs it with weight 1.0.

Late and repeated arrivals
- A turn whose ``turn_id`` was seen in its session, or whose ``(turn_index, content)`` was, is a
  duplicate: it yields no events at all (at-least-once delivery is idempotent).
- A turn that sorts between two turns already linked (it arrived late) removes the now-wrong NEXT
  edge (EdgeRemoved, reason ``late-arrival``) and adds the two edges through itself, so NEXT stays
  gap-free. A late user turn also re-points the derived CAUSAL edges of the assistant turns that
  now answer it (EdgeRemoved + EdgeUpserted).
- Two different turns with the same index are ordered by node id; both stay in the chain.
- Only the newest ``max_session_turns`` of a session are kept in state; a turn older than that
  window gets its node and CAUSAL/REF edges but no NEXT edge.

Determinism: every id is uuid5 of content and source coordinates; MemoryEvent ids come from
``memory_event`` with the turn's EventRef as source. Embeddings are computed per batch by one
``embed`` call; the default embedder is batch-invariant, so replays give byte-identical events
however the input is batched, and also after a ``state_to_dict``/``state_from_dict`` round trip.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.processors.embedding.base import Embedder
from engram.processors.tokens import BatchTokenCounter, TokenCounter
from engram.processors.trace.config import BALANCED, TraceConfig
from engram.processors.trace.emit import TurnEmitter, code_file_events
from engram.processors.trace.state import (
    ASSISTANT,
    ASSISTANT_EXPLICIT,
    SYSTEM,
    TOOL,
    USER,
    SessionOrder,
    TraceState,
    state_from_dict,
    state_to_dict,
)
from engram.schemas.events import stable_id
from engram.schemas.records import CodeChange, ConversationTurn, EventRef, MemoryEvent

ROLE_CODES = {"user": USER, "assistant": ASSISTANT, "tool": TOOL, "system": SYSTEM}
TOOL_CALL_ID_KEY = "tool_call_id"


def event_node_id(user_id: str, turn_id: str) -> str:
    """Node id of a turn: uuid5 of the user and the producer's turn id."""
    return stable_id("event", user_id, turn_id)


def content_digest(role: str, content: str) -> str:
    return hashlib.blake2b(f"{role}\x1f{content}".encode(), digest_size=12).hexdigest()


class TraceBuilder:
    """Builds the Trace DAG for many keys; each key's state is a ``TraceState``.

    Feed it with ``apply_batch``; persist a key's state with ``dump_state`` / ``load_state``.
    """

    def __init__(
        self,
        config: TraceConfig = BALANCED,
        *,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if embedder is None:
            from engram.processors.embedding import default_embedder

            embedder = default_embedder()
        if token_counter is None:
            from engram.processors.tokens import default_token_counter

            token_counter = default_token_counter()
        self.config = config
        self.embedder = embedder
        self.token_counter = token_counter
        self._states: dict[str, TraceState] = {}

    def state(self, key: str) -> TraceState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = TraceState(key)
        return state

    def load_state(self, key: str, data: dict[str, Any] | None) -> None:
        """Replace the in-memory state of ``key`` (None: start empty)."""
        self._states[key] = TraceState(key) if data is None else state_from_dict(data)

    def adopt(self, key: str, state: TraceState) -> None:
        """Work on ``state`` for ``key`` (a state read from its table records, or kept in hand)."""
        self._states[key] = state

    def dump_state(self, key: str) -> dict[str, Any]:
        return state_to_dict(self.state(key))

    def drop_state(self, key: str) -> None:
        self._states.pop(key, None)

    def apply(self, turn: ConversationTurn, source: EventRef) -> list[MemoryEvent]:
        return self.apply_batch([(turn, source)])

    def apply_batch(self, items: Sequence[tuple[ConversationTurn, EventRef]]) -> list[MemoryEvent]:
        """MemoryEvents for turns in input order; one ``embed`` call for the whole batch."""
        fresh: list[tuple[ConversationTurn, EventRef, str, str]] = []
        seen: set[tuple[str, str]] = set()
        for turn, source in items:
            node_id = event_node_id(turn["user_id"], turn["turn_id"])
            digest = content_digest(turn["role"], turn["content"])
            order = self.state(turn["user_id"]).sessions.get(turn["session_id"])
            batch_key = (turn["session_id"], node_id)
            content_key = (turn["session_id"], f"{turn['turn_index']}\x1f{digest}")
            if (order is not None and order.is_duplicate(node_id, turn["turn_index"], digest)) or (
                batch_key in seen or content_key in seen
            ):
                continue
            seen.update((batch_key, content_key))
            fresh.append((turn, source, node_id, digest))
        if not fresh:
            return []
        texts = [t["content"] for t, _, _, _ in fresh]
        vectors = self.embedder.embed(texts)
        counts = self._count_tokens(texts)
        events: list[MemoryEvent] = []
        for (turn, source, node_id, digest), vector, tokens in zip(fresh, vectors, counts, strict=True):
            events.extend(self._turn(turn, source, node_id, digest, vector, tokens))
        return events

    def _count_tokens(self, texts: list[str]) -> list[int]:
        if isinstance(self.token_counter, BatchTokenCounter):
            return self.token_counter.count_batch(texts)
        return [self.token_counter.count(text) for text in texts]

    def _turn(
        self,
        turn: ConversationTurn,
        source: EventRef,
        node_id: str,
        digest: str,
        vector: npt.NDArray[np.float32],
        tokens: int,
    ) -> list[MemoryEvent]:
        cfg = self.config
        state = self.state(turn["user_id"])
        order = state.session(turn["session_id"], cfg.max_sessions)
        role = ROLE_CODES[turn["role"]]
        if role == ASSISTANT and turn["causal_parent_ids"]:
            role = ASSISTANT_EXPLICIT
        out = TurnEmitter(turn, source, node_id)
        out.node(vector, tokens)
        key = (turn["turn_index"], node_id)
        if order.is_before_window(key):
            pos = -1
        else:
            pos = order.insert(key, role, digest)
            prev, nxt = order.neighbours(pos)
            out.next_edges(prev, nxt)
        for parent in dict.fromkeys(turn["causal_parent_ids"]):
            out.causal(event_node_id(turn["user_id"], parent), node_id, "explicit")
        self._tool_links(state, turn, node_id, out)
        if pos >= 0 and role == ASSISTANT:
            asked = order.user_before(pos, cfg.answer_lookback)
            if asked is not None:
                out.causal(asked, node_id, "answers")
        elif pos >= 0 and role == USER:
            self._repoint_answers(order, pos, node_id, out)
        order.evict(cfg.max_session_turns)  # after the lookups above: eviction shifts positions
        if turn["role"] in cfg.concept_roles and vector.any():
            atlas = state.atlas_for(len(vector), cfg.thresholds, centred=cfg.centre)
            refs, changes = atlas.place(vector, node_id, cfg.max_refs, cfg.max_concepts)
            out.concepts(changes, cfg.label_chars)
            out.refs(refs)
        return out.events

    def _repoint_answers(self, order: SessionOrder, pos: int, node_id: str, out: TurnEmitter) -> None:
        """A user turn that arrived late now is the question of the assistant turns after it."""
        answers = list(order.answers_after(pos))
        if not answers:
            return
        old = order.user_before(pos, self.config.answer_lookback)
        for answer in answers:
            if old is not None:
                out.causal_removed(old, answer, "late-arrival")
            out.causal(node_id, answer, "answers")

    def _tool_links(self, state: TraceState, turn: ConversationTurn, node_id: str, out: TurnEmitter) -> None:
        cap = self.config.max_pending_calls
        state.calls_dirty |= bool(turn["tool_calls"])
        for call in turn["tool_calls"]:
            state.calls[call["call_id"]] = node_id
            for result in state.early_results.pop(call["call_id"], []):
                out.causal(node_id, result, "tool-call")
        _trim(state.calls, cap)
        call_id = turn["metadata"].get(TOOL_CALL_ID_KEY)
        if turn["role"] == "tool" and call_id:
            caller = state.calls.get(call_id)
            if caller is not None:
                out.causal(caller, node_id, "tool-call")
            else:
                state.early_results.setdefault(call_id, []).append(node_id)
                state.calls_dirty = True
                _trim(state.early_results, cap)

    def apply_code_batch(self, items: Sequence[tuple[CodeChange, EventRef]]) -> list[MemoryEvent]:
        """A ``code_file`` node per change, CAUSAL from the turns that caused it. Stateless."""
        events: list[MemoryEvent] = []
        for change, source in items:
            parents = [
                event_node_id(change["user_id"], p) if change["user_id"] is not None else p
                for p in dict.fromkeys(change["causal_parent_ids"])
            ]
            tokens = self.token_counter.count(change["content"])
            events.extend(code_file_events(change, source, parents, tokens))
        return events


def _trim(table: dict[str, Any], cap: int) -> None:
    while len(table) > cap:
        del table[next(iter(table))]
