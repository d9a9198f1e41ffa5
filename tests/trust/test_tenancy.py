"""Multi-tenancy, as a property: random organizations, teams, users, membership tuples and node
placements; every request goes through the token gate, and the compiled context holds only what the
principal's resolved set of instances allows (an oracle resolves it here, independently of the
Gate). The same request over a store holding only what the principal may see gives the same items
in the same order with the same scores: other tenants' data changes nothing, not even a statistic.

50 worlds x 200 requests = 10,000 requests checked for leaks; every request is also compiled over
the principal-only store and compared.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.rebac import Viewer, is_visible, node_instance
from engram.processors.trust.authorize import Gate
from engram.processors.trust.relations import Relationship, Relationships
from engram.processors.trust.tokens import TokenConfig, TokenVerifier, mint
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.records import LAYERS, NODE_UPSERTED, ContextRequest, EventRef, Layer, MemoryEvent, NodeUpserted
from tests.compiler.haystack import NEEDLES, distractors
from tests.compiler.memory import T0, VectorView, counter, embedder, request
from tests.schemas.test_codec import _encode_with_writer

SECRET = "tenancy-test-secret-of-32-bytes!"
NOW_S = T0 // 1000
TEXTS = [t for t, _ in NEEDLES] + distractors(30)
QUERIES = [q for _, q in NEEDLES] + ["What did Maria do last week?", "Why did Tom start learning Spanish?"]
REQUESTS_PER_WORLD = 200
WORLDS = 50


@dataclass(frozen=True)
class Placement:
    layer: Layer
    author: int
    instance: int | None  # an org or team index for those layers; None: written before instances


@dataclass(frozen=True)
class World:
    orgs: int
    team_orgs: tuple[int, ...]  # team i is part_of org team_orgs[i]
    users: int
    memberships: tuple[tuple[int, int], ...]  # (user, team)
    org_members: tuple[tuple[int, int], ...]  # (user, org)
    placements: tuple[Placement, ...]

    def tuples(self) -> list[Relationship]:
        out = [Relationship(f"team:t{t}", "part_of", f"org:o{o}") for t, o in enumerate(self.team_orgs)]
        out += [Relationship(f"user:u{u}", "member_of", f"team:t{t}") for u, t in self.memberships]
        out += [Relationship(f"user:u{u}", "member_of", f"org:o{o}") for u, o in self.org_members]
        return out

    def instance(self, p: Placement) -> str | None:
        if p.instance is None or p.layer in ("USER", "SYSTEM"):
            return None
        return (
            f"org:o{p.instance % self.orgs}"
            if p.layer == "ORGANIZATION"
            else f"team:t{p.instance % len(self.team_orgs)}"
        )

    def resolved(self, user: int) -> frozenset[str]:
        """The oracle: system, the user's own instance, its teams and orgs and its teams' orgs."""
        teams = {t for u, t in self.memberships if u == user}
        orgs = {o for u, o in self.org_members if u == user} | {self.team_orgs[t] for t in teams}
        return frozenset({"system", f"user:u{user}", *(f"team:t{t}" for t in teams), *(f"org:o{o}" for o in orgs)})


@st.composite
def worlds(draw: st.DrawFn) -> World:
    orgs = draw(st.integers(1, 3))
    team_orgs = tuple(draw(st.lists(st.integers(0, orgs - 1), min_size=1, max_size=4)))
    users = draw(st.integers(2, 5))
    pairs = st.tuples(st.integers(0, users - 1), st.integers(0, len(team_orgs) - 1))
    memberships = tuple(sorted(set(draw(st.lists(pairs, max_size=6)))))
    org_pairs = st.tuples(st.integers(0, users - 1), st.integers(0, orgs - 1))
    org_members = tuple(sorted(set(draw(st.lists(org_pairs, max_size=3)))))
    placement = st.builds(
        Placement, st.sampled_from(LAYERS), st.integers(0, users - 1), st.one_of(st.none(), st.integers(0, 11))
    )
    placements = tuple(draw(st.lists(placement, min_size=len(TEXTS), max_size=len(TEXTS))))
    return World(orgs, team_orgs, users, memberships, org_members, placements)


def _ref(offset: int) -> EventRef:
    return {"topic": "engram.turns", "partition": 0, "offset": offset}


def _events(world: World, keep: Sequence[bool]) -> list[MemoryEvent]:
    events: list[MemoryEvent] = []
    for i, (text, p) in enumerate(zip(TEXTS, world.placements, strict=True)):
        if keep[i]:
            author = f"u{p.author}"
            change = node_upserted(
                f"m{i:02d}", "turn", p.layer, T0 + i * 1000, text=text, tokens=counter().count(text),
                user_id=author, session_id="s1", instance=world.instance(p),
            )  # fmt: skip
            events.append(memory_event(author, T0 + i * 1000, [_ref(i)], NODE_UPSERTED, change))
    return events


def _compiler(events: list[MemoryEvent]) -> ContextCompiler:
    view = VectorView(embedder=embedder(), token_counter=counter())
    view.apply(events)
    return ContextCompiler(view, embedder(), counter(), BALANCED, clock=lambda: 0.0)


def _visible_to(world: World, user: int, resolved: frozenset[str]) -> list[bool]:
    viewer = Viewer(f"u{user}", resolved)
    return [is_visible(p.layer, f"u{p.author}", world.instance(p), viewer, frozenset(LAYERS)) for p in world.placements]


def _gated(gate: Gate, req: ContextRequest, token: str) -> ContextRequest:
    access = gate.access(req["user_id"], token, req["authorized_layers"], NOW_S)
    assert access.instances is not None
    return {**req, "authorized_layers": sorted(access.layers), "instances": sorted(access.instances)}


def _ranked(compiler: ContextCompiler, req: ContextRequest) -> list[tuple[str, float]]:
    return [(item["node_id"], round(item["score"], 9)) for item in compiler.compile(req)["items"]]


@given(world=worlds(), seed=st.integers(0, 2**16))
@settings(max_examples=WORLDS, deadline=None)
def test_no_item_outside_the_resolved_set_and_other_tenants_change_nothing(world: World, seed: int) -> None:
    relationships = Relationships()
    for tuple_ in world.tuples():
        relationships.add(tuple_)
    config = TokenConfig(SECRET)
    gate = Gate(TokenVerifier(config), relationships)
    everything = _compiler(_events(world, [True] * len(TEXTS)))
    alone: dict[int, ContextCompiler] = {}
    for n in range(REQUESTS_PER_WORLD):
        user = (seed + n) % world.users
        resolved = world.resolved(user)
        token = mint(config, f"user:u{user}", NOW_S + 600)
        req = _gated(gate, request(QUERIES[n % len(QUERIES)], (60, 150, 400)[n % 3], user_id=f"u{user}"), token)
        assert set(req.get("instances") or ()) == resolved
        ranked = _ranked(everything, req)
        for node_id, _ in ranked:
            p = world.placements[int(node_id[1:])]
            home = node_instance(p.layer, f"u{p.author}", world.instance(p))
            assert home in resolved and (p.layer != "USER" or p.author == user), (node_id, home, resolved)
        if user not in alone:
            kept = _visible_to(world, user, resolved)
            alone[user] = _compiler(_events(world, kept))
        assert ranked == _ranked(alone[user], req)


def test_a_team_node_written_before_instances_lives_in_its_authors_instance() -> None:
    """A NodeUpserted of MemoryEvent v2 (no ``instance``) decodes with instance None: a TEAM node
    then belongs to its author's own instance, visible to the author, not to the author's team."""
    from importlib import resources

    v2 = json.loads(
        resources.files("engram.schemas").joinpath("avro", "history", "MemoryEvent.v2.avsc").read_text("utf-8")
    )
    node = node_upserted("old", "turn", "TEAM", T0, text="The payments team deploys on Tuesdays.", user_id="carol")
    del node["instance"]
    old = memory_event("carol", T0, [_ref(1)], NODE_UPSERTED, node)
    decoded: MemoryEvent = AvroCodec[Any]("MemoryEvent").decode(_encode_with_writer(v2, dict(old)))
    upserted = change_as(decoded, NodeUpserted)
    assert upserted is not None and upserted.get("instance", "absent") is None
    view = VectorView(embedder=embedder(), token_counter=counter())
    view.apply([decoded])
    team = frozenset({"system", "team:payments"})
    assert view.text_search("payments deploys", 5, Viewer("carol", team | {"user:carol"}), LAYERS)
    assert not view.text_search("payments deploys", 5, Viewer("dave", team | {"user:dave"}), LAYERS)
