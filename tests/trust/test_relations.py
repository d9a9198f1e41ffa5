"""Relationship tuples: what they grant, against a brute-force fixpoint, and what they refuse."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.trust.instances import InstanceError, parse_instance
from engram.processors.trust.relations import RelationError, Relationship, Relationships

USERS = [f"user:u{i}" for i in range(4)] + ["service:bot"]
GROUPS = [f"team:t{i}" for i in range(4)] + [f"org:o{i}" for i in range(2)]

tuples = st.lists(
    st.one_of(
        st.builds(Relationship, st.sampled_from(USERS), st.sampled_from(["member_of", "reader_of"]),
                  st.sampled_from(GROUPS)),
        st.builds(Relationship, st.sampled_from(GROUPS), st.just("part_of"), st.sampled_from(GROUPS)),
        st.builds(Relationship, st.sampled_from(USERS), st.just("writer_of"), st.sampled_from([*GROUPS, "system"])),
    ),
    max_size=25,
)  # fmt: skip


def _brute_readable(held: set[Relationship], principal: str) -> set[str]:
    """The least set holding system, the principal when a user, and closed under the grants."""
    out = {"system"} | ({principal} if principal.startswith("user:") else set())
    frontier = {principal}
    changed = True
    while changed:
        changed = False
        for t in held:
            if t.relation != "writer_of" and t.subject in frontier | out and t.object not in out:
                out.add(t.object)
                changed = True
    return out


@settings(max_examples=200)
@given(tuples, st.data())
def test_reading_is_the_closure_of_the_tuples_held(added: list[Relationship], data: st.DataObject) -> None:
    rel = Relationships()
    held: set[Relationship] = set()
    for t in added:
        try:
            rel.add(t)
            held.add(t)
        except RelationError as exc:
            assert t.subject == t.object or "cycle" in str(exc)
    removed = data.draw(st.lists(st.sampled_from(sorted(held)), unique=True) if held else st.just([]))
    for t in removed:
        rel.remove(t)
        held.discard(t)
    for principal in USERS:
        assert rel.readable(principal) == _brute_readable(held, principal)
        granted = {t.object for t in held if t.subject == principal and t.relation == "writer_of"}
        assert rel.writable(principal) == granted | ({principal} if principal.startswith("user:") else set())


def test_a_revocation_takes_effect_at_the_next_resolution() -> None:
    rel = Relationships()
    rel.add(Relationship("user:ada", "member_of", "team:payments"))
    rel.add(Relationship("team:payments", "part_of", "org:acme"))
    assert rel.readable("user:ada") == {"system", "user:ada", "team:payments", "org:acme"}
    rel.remove(Relationship("user:ada", "member_of", "team:payments"))
    assert rel.readable("user:ada") == {"system", "user:ada"}


def test_a_part_of_cycle_is_refused_and_changes_nothing() -> None:
    rel = Relationships()
    rel.add(Relationship("team:a", "part_of", "team:b"))
    rel.add(Relationship("team:b", "part_of", "org:x"))
    version = rel.version
    with pytest.raises(RelationError, match="cycle"):
        rel.add(Relationship("org:x", "part_of", "team:a"))
    assert rel.version == version and len(rel.tuples) == 2


@pytest.mark.parametrize(
    ("subject", "relation", "obj", "error"),
    [
        ("user:ada", "owns", "team:a", "unknown relation"),
        ("team:a", "member_of", "team:b", "member_of relates"),
        ("user:ada", "member_of", "user:bob", "member_of relates"),
        ("user:ada", "member_of", "team:a' OR 1=1 --", "not a layer instance"),
        ("user:Ada", "member_of", "team:a", "not a layer instance"),
        ("user:ada", "member_of", "team:" + "a" * 200, "not a layer instance"),
    ],
)
def test_malformed_tuples_say_why(subject: str, relation: str, obj: str, error: str) -> None:
    with pytest.raises((RelationError, InstanceError), match=error):
        Relationships().add(Relationship(subject, relation, obj))


def test_instances_parse_to_their_layer() -> None:
    assert parse_instance("team:payments").layer == "TEAM"
    assert parse_instance("system").layer == "SYSTEM"
    assert parse_instance("service:ingest").layer is None
    with pytest.raises(InstanceError):
        parse_instance("system:x")
