"""The schema evolution check (tools/check_schemas.py) finds what breaks old data, and only that."""

from __future__ import annotations

from typing import Any

import pytest

from tools.check_schemas import candidates, incompatibilities, main


def record(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "record", "name": "R", "namespace": "engram", "fields": list(fields)}


OLD = record(
    {"name": "id", "type": "string"},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}},
    {"name": "note", "type": ["null", "string"], "default": None},
)


@pytest.mark.parametrize(
    ("new", "compatible"),
    [
        (OLD, True),
        (record(*OLD["fields"], {"name": "extra", "type": "int", "default": 0}), True),  # added with a default
        (record(*OLD["fields"][:2]), True),  # a field dropped: old data still reads
        (record(*OLD["fields"], {"name": "extra", "type": "int"}), False),  # added without a default
        (record({"name": "id", "type": "int"}, *OLD["fields"][1:]), False),  # a type changed
        (
            record(
                OLD["fields"][0],
                {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A"]}},
                OLD["fields"][2],
            ),
            False,
        ),  # a symbol old data uses is gone  # fmt: skip
    ],
)
def test_incompatibilities_are_found(new: dict[str, Any], compatible: bool) -> None:
    assert (list(incompatibilities(OLD, new)) == []) is compatible


def test_samples_use_every_branch_and_symbol() -> None:
    samples = candidates(OLD, {})
    assert {s["kind"] for s in samples} == {"A", "B"} and {s["note"] for s in samples} >= {None, "x"}


def test_the_repository_schemas_read_their_older_writers() -> None:
    assert main([]) == 0
