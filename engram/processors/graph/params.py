"""A query's parameters, as JSON gives them, read with types and clear errors (`QueryError`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import EdgeType, NodeType, QueryError, parse_edge_types, parse_node_types


class Params:
    __slots__ = ("_raw",)

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw

    def __contains__(self, name: str) -> bool:
        return name in self._raw

    def _bad(self, name: str, expected: str) -> QueryError:
        return QueryError(f"parameter {name!r} must be {expected}, got {self._raw.get(name)!r}")

    def text(self, name: str, default: str | None = None) -> str:
        value = self._raw.get(name, default)
        if not isinstance(value, str):
            raise self._bad(name, "a string") if name in self._raw else QueryError(f"parameter {name!r} is required")
        return value

    def integer(self, name: str, default: int) -> int:
        value = self._raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._bad(name, "an integer")
        return value

    def optional_int(self, name: str) -> int | None:
        return None if self._raw.get(name) is None else self.integer(name, 0)

    def number(self, name: str, default: float) -> float:
        value = self._raw.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            raise self._bad(name, "a finite number")
        return float(value)

    def flag(self, name: str) -> bool:
        value = self._raw.get(name, False)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def choice(self, name: str, options: Sequence[str]) -> str:
        value = self._raw.get(name, options[0])
        if value not in options:
            raise self._bad(name, f"one of {', '.join(options)}")
        return str(value)

    def strings(self, name: str) -> list[str]:
        value = self._raw.get(name, [])
        if isinstance(value, str):
            return [v for v in value.split(",") if v]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(name, "a list of strings")
        return list(value)

    def node_types(self, name: str) -> frozenset[NodeType]:
        return parse_node_types(self.strings(name))

    def edge_types(self, name: str) -> frozenset[EdgeType]:
        return parse_edge_types(self.strings(name))

    def vector(self, name: str) -> npt.NDArray[np.float32] | None:
        value = self._raw.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, int | float) for v in value):
            raise self._bad(name, "a list of numbers")
        return np.asarray(value, dtype=np.float32)

    def node(self, sub: Subgraph, name: str) -> int:
        """A node id parameter, as the subgraph's local index; an id the principal cannot see is
        reported exactly like one that does not exist."""
        return self.node_id(sub, self.text(name))

    @staticmethod
    def node_id(sub: Subgraph, node_id: str) -> int:
        local = sub.find(node_id)
        if local is None:
            msg = f"no node {node_id!r} in the memory you may see"
            raise QueryError(msg)
        return local
