"""The memories and requests of ``engram bench compile``: who wrote each node, who asks, under which layers.

A `Layout` names the author and layer of every node and the (user, session) of every request, and
the memory is built from it as the Trace would build it from turns: MemoryEvents published straight
to engram.memory (NodeUpserted with embeddings from the default embedder, plus NEXT edges within
each session of `SESSION_TURNS` nodes of one author). Each event is keyed by its author's user id,
whatever the node's layer: that is what the Trace does for a turn (processors/trace/emit.py:
``TurnEmitter.key = turn["user_id"]``, a TEAM-layer turn included), so the bench's shared memory
reaches the worker exactly as a team's turns would. Each node carries what the Trace records of its
turn (``role``, ``turn_id``, ``turn_index``), and a TEAM node the team's instance (`TEAM_INSTANCE`),
so the worker's own steps read the memory as they read a Trace's: the facts step extracts facts from
it and dreaming dreams over its sessions (both derive nodes of their own).

Without ``--data`` the texts are generated sentences over the bench's words with one first-person
statement in every `STATEMENT_EVERY` (`memory_texts`): statements the facts step turns into facts.

Two layouts:
- ``many_users``: node i belongs to ``bench-user-{i % users}`` (layer USER); request i is asked by
  ``bench-user-{i % users}`` from its session ``<user>-asks`` under ``[USER]``. A principal sees
  its own share, about ``nodes / users`` nodes.
- ``one_principal``: 60 % of the nodes are the principal's own (layer USER), 40 % are TEAM-layer
  nodes written by `TEAMMATES` teammates, spread evenly through the timeline; every request is
  asked by the principal under ``[TEAM, USER]`` (processors/rebac.py: the TEAM layer is shared
  within its layer), from ``sessions`` sessions in turn, so each session gets the same requests as
  a many_users session does and the SLB sees the same traffic per session. The principal sees all
  ``nodes`` nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from engram.benchmarks.ingest import WORDS, texts
from engram.benchmarks.locomo_data import locomo_conversations
from engram.processors.embedding.vectors import to_wire
from engram.processors.rebac import Viewer, is_visible
from engram.schemas.codec import AvroCodec
from engram.schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, ContextRequest, EventRef, Layer, MemoryEvent

BASE_TIME_MS: Final = 1_700_000_000_000
SESSION_TURNS: Final = 40
SOURCE_TOPIC: Final = "engram.bench.compile"  # provenance of the synthetic nodes (no real input topic)
PRINCIPAL: Final = "bench-principal"
TEAMMATES: Final = 8  # authors of the one_principal scenario's TEAM-layer nodes
OWN_SHARE: Final = (3, 5)  # one_principal: the principal's own nodes are 3/5 of --nodes (60,000 of 100,000)
TEAM_INSTANCE: Final = "team:bench"  # the instance of every TEAM-layer node, as a team's turns name it
STATEMENT_EVERY: Final = 10  # generated texts: one in this many is a first-person statement
STATEMENTS: Final = (
    "I moved to Lisbon last spring.",
    "My sister is a nurse.",
    "I started learning the guitar.",
    "I switched to tea.",
    "I work as a data engineer.",
    "I love hiking in the mountains.",
    "I am allergic to peanuts.",
    "My favourite color is green.",
    "I have two cats.",
    "I no longer drink coffee.",
    "I live in Hamburg.",
    "I play the piano.",
)
QUESTION_FORMS: Final = (
    "What did I say about {a} and {b}?",
    "When did we talk about the {a}?",
    "Why did the {a} matter for the {b}?",
    "How has my {a} changed over time, and what led to the {b}?",
    "Summarize everything about {a}.",
    "Who was at the {a} with me?",
)

TextTable = dict[str, tuple[list[float], int]]  # text -> (embedding, tokens)


@dataclass(frozen=True, slots=True)
class Author:
    user_id: str
    layer: Layer

    @property
    def instance(self) -> str | None:
        """The instance the author's nodes name: the team's for TEAM, none (the author's own) for USER."""
        return TEAM_INSTANCE if self.layer == "TEAM" else None


@dataclass(frozen=True, slots=True)
class Layout:
    """One scenario's memory and askers. Node i is written by ``owners[i]``; request i is asked by
    ``askers[i % len(askers)]`` (user, session) under ``layers``."""

    name: str
    owners: tuple[Author, ...]
    askers: tuple[tuple[str, str], ...]
    layers: tuple[Layer, ...]

    def principals(self) -> list[str]:
        """The users who ask, in first-asked order."""
        return list(dict.fromkeys(user for user, _ in self.askers))

    def sees(self, user: str, author: Author) -> bool:
        """Whether ``user`` may see ``author``'s nodes under ``layers`` (processors.rebac.is_visible)."""
        return is_visible(author.layer, author.user_id, author.instance, Viewer(user), frozenset(self.layers))

    def visible_counts(self) -> dict[str, int]:
        """Per principal, the nodes of this memory it may see under ``layers``."""
        written = Counter(self.owners)
        return {user: sum(n for a, n in written.items() if self.sees(user, a)) for user in self.principals()}

    def visible_authors(self) -> dict[str, set[str]]:
        """Per principal, the authors (event keys) of the nodes it may see under ``layers``."""
        authors = set(self.owners)
        return {user: {a.user_id for a in authors if self.sees(user, a)} for user in self.principals()}


def many_users(nodes: int, users: int) -> Layout:
    names = [f"bench-user-{u}" for u in range(users)]
    owners = tuple(Author(names[i % users], "USER") for i in range(nodes))
    return Layout("many_users", owners, tuple((n, f"{n}-asks") for n in names), ("USER",))


def one_principal(nodes: int, sessions: int) -> Layout:
    """The principal's own nodes, exactly ``nodes * 3 // 5``, interleaved evenly with the TEAM
    nodes (node i is the principal's when ⌊(i+1)·own/nodes⌋ steps up), the TEAM nodes dealt to
    the teammates in turn."""
    own_share, of = OWN_SHARE
    own = nodes * own_share // of
    principal = Author(PRINCIPAL, "USER")
    team = [Author(f"bench-teammate-{t}", "TEAM") for t in range(TEAMMATES)]
    owners: list[Author] = []
    for i in range(nodes):
        if (i + 1) * own // nodes > i * own // nodes:
            owners.append(principal)
        else:
            owners.append(team[(i - (i + 1) * own // nodes) % TEAMMATES])
    askers = tuple((PRINCIPAL, f"{PRINCIPAL}-asks-{s}") for s in range(sessions))
    return Layout("one_principal", tuple(owners), askers, ("TEAM", "USER"))


def memory_texts(data: Path | None) -> list[str]:
    """The nodes' texts: LoCoMo turns when ``data`` holds them, else the generated sentences
    (benchmarks/ingest.py: ``texts``) with a first-person statement after every
    ``STATEMENT_EVERY - 1`` of them."""
    if data is not None:
        return texts(data)
    out: list[str] = []
    for i, text in enumerate(texts(None)):
        out.append(text)
        if i % (STATEMENT_EVERY - 1) == STATEMENT_EVERY - 2:
            out.append(STATEMENTS[(i // (STATEMENT_EVERY - 1)) % len(STATEMENTS)])
    return out


def text_table(corpus: Sequence[str], nodes: int) -> TextTable:
    """Embeddings and token counts of the texts ``nodes`` nodes use (node i: ``corpus[i % len]``),
    each embedded once."""
    from engram.processors.embedding import default_embedder
    from engram.processors.tokens import default_token_counter

    distinct = sorted({corpus[i % len(corpus)] for i in range(min(nodes, len(corpus)))})
    vectors = default_embedder().embed(distinct)
    counter = default_token_counter()
    return {t: (vectors[row].tolist(), counter.count(t)) for row, t in enumerate(distinct)}


def layout_events(layout: Layout, corpus: Sequence[str], table: TextTable) -> list[MemoryEvent]:
    """Node i (text ``corpus[i % len]``, event time ``BASE_TIME_MS + i`` s) is its author's k-th
    node, id uuid5(author, k), in session k // SESSION_TURNS, NEXT-linked from the author's
    previous node in that session, said by the user (k even) or the assistant (k odd); every event
    is keyed by the author's user id."""
    written: Counter[str] = Counter()
    events: list[MemoryEvent] = []
    for i, author in enumerate(layout.owners):
        user, layer = author.user_id, author.layer
        index = written[user]
        written[user] += 1
        text = corpus[i % len(corpus)]
        embedding, tokens = table[text]
        when = BASE_TIME_MS + i * 1000
        node_id = stable_id("bench-compile", user, index)
        source: list[EventRef] = [{"topic": SOURCE_TOPIC, "partition": 0, "offset": i}]
        role = "user" if index % 2 == 0 else "assistant"
        # What the Trace records of a turn (processors/trace/emit.py), plus a speaker as a client's
        # metadata may carry one (LoCoMo's).
        properties = {"role": role, "turn_id": f"{node_id}-turn", "turn_index": str(index), "speaker": role}
        change = node_upserted(
            node_id, "event", layer, when, text=text, tokens=tokens, user_id=user,
            session_id=f"{user}-s{index // SESSION_TURNS}", vector=to_wire(embedding), properties=properties,
            instance=author.instance,
        )  # fmt: skip
        events.append(memory_event(user, when, source, NODE_UPSERTED, change))
        if index % SESSION_TURNS:
            edge = edge_upserted("NEXT", stable_id("bench-compile", user, index - 1), node_id, layer)
            events.append(memory_event(user, when, source, EDGE_UPSERTED, edge))
    return events


def memory_events(nodes: int, users: int, corpus: Sequence[str]) -> list[MemoryEvent]:
    """The many_users memory: event nodes i = 0..nodes-1 of user i % users (layer USER)."""
    return layout_events(many_users(nodes, users), corpus, text_table(corpus, nodes))


@dataclass(frozen=True, slots=True)
class Memory:
    payloads: list[tuple[bytes, bytes]]  # (key, encoded MemoryEvent), in publishing order
    nodes: int
    edges: int


def encode_memory(events: Sequence[MemoryEvent]) -> Memory:
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    payloads = [(e["key"].encode(), codec.encode(e)) for e in events]
    edges = sum(1 for e in events if e["change"][0] == EDGE_UPSERTED)
    return Memory(payloads, len(events) - edges, edges)


def build_memory(nodes: int, users: int, corpus: Sequence[str]) -> Memory:
    """``memory_events``, encoded for the memory topic."""
    return encode_memory(memory_events(nodes, users, corpus))


def questions(data: Path | None) -> list[str]:
    """LoCoMo QA questions when ``--data`` holds them, else generated ones over the corpus words."""
    if data is not None:
        found = [
            str(qa["question"]) for _, conv in locomo_conversations(data) for qa in conv["qa"] if qa.get("question")
        ]
        if found:
            return found
    forms = QUESTION_FORMS
    return [
        forms[i % len(forms)].format(a=WORDS[(i * 5) % len(WORDS)], b=WORDS[(i * 11 + 3) % len(WORDS)])
        for i in range(300)
    ]


def layout_requests(layout: Layout, count: int, asked: Sequence[str], start: int, budget: int) -> list[ContextRequest]:
    """Requests start..start+count-1: request i asks ``asked[7i mod len]`` from ``askers[i mod len]``."""
    out: list[ContextRequest] = []
    for i in range(start, start + count):
        user, session = layout.askers[i % len(layout.askers)]
        out.append(
            {
                "request_id": stable_id("bench-compile-request", i),
                "user_id": user,
                "session_id": session,
                "query": asked[(i * 7) % len(asked)],
                "token_budget": budget,
                "authorized_layers": list(layout.layers),
                "intent_hint": None,
                "agent_id": "bench",
                "event_time_ms": BASE_TIME_MS + 10**9 + i,
            }
        )
    return out


def make_requests(count: int, users: int, asked: Sequence[str], start: int, budget: int) -> list[ContextRequest]:
    """many_users requests (``layout_requests`` over ``users`` users)."""
    return layout_requests(many_users(0, users), count, asked, start, budget)
