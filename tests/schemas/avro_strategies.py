"""Hypothesis strategies generated from an Avro schema (JSON form), for round-trip properties."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    "null": st.none(),
    "boolean": st.booleans(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "long": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(width=32, allow_nan=False),
    "double": st.floats(allow_nan=False),
    "bytes": st.binary(max_size=64),
    "string": st.text(max_size=40),
}


def _qualify(name: str, namespace: str) -> str:
    return name if "." in name else f"{namespace}.{name}"


def strategy(schema: Any, named: dict[str, st.SearchStrategy[Any]], namespace: str = "") -> st.SearchStrategy[Any]:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return PRIMITIVES[schema]
        return st.deferred(lambda: named[_qualify(schema, namespace)])
    if isinstance(schema, list):
        return st.one_of([_union_branch(branch, named, namespace) for branch in schema])
    kind = schema["type"]
    if kind == "record":
        return _record(schema, named, namespace)
    if kind == "enum":
        found = st.sampled_from(schema["symbols"])
        named[_qualify(schema["name"], schema.get("namespace", namespace))] = found
        return found
    if kind == "array":
        return st.lists(strategy(schema["items"], named, namespace), max_size=4)
    if kind == "map":
        return st.dictionaries(st.text(max_size=10), strategy(schema["values"], named, namespace), max_size=4)
    return strategy(kind, named, namespace)


def _record(schema: dict[str, Any], named: dict[str, st.SearchStrategy[Any]], namespace: str) -> st.SearchStrategy[Any]:
    ns = schema.get("namespace", namespace)
    fields = {f["name"]: strategy(f["type"], named, ns) for f in schema["fields"]}
    found = st.fixed_dictionaries(fields)
    named[_qualify(schema["name"], ns)] = found
    return found


def _union_branch(branch: Any, named: dict[str, st.SearchStrategy[Any]], namespace: str) -> Any:
    """Records inside unions travel as (full name, record) tuples, as the codec reads them."""
    if isinstance(branch, dict) and branch.get("type") == "record":
        full = _qualify(branch["name"], branch.get("namespace", namespace))
        return strategy(branch, named, namespace).map(lambda rec: (full, rec))
    return strategy(branch, named, namespace)


def record_strategy(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return strategy(schema, {}, schema.get("namespace", ""))
