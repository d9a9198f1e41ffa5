"""GraphStore: the typed memory graph a worker owns, as columns, kept current per MemoryEvent.

Nodes and edges are rows of growable numpy columns (`processors.graph.columns`), appended as
events arrive; a node id or edge id maps to its row. An edge may name a node not seen yet (a turn
on another worker's partition, a code node): the node gets a placeholder row that stays invisible
until its own event fills it. Removing marks a row dead; rows are never reused, so a replay of
the same events gives the same rows. ``version`` changes with every change a query could see;
`Subgraph`s (processors/graph/subgraph.py) are derived from the columns per (principal, version).

The fold from MemoryEvents is `GraphFold` (processors/graph/fold.py); the bench generator and the
tests call `add_node` / `add_edge` directly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.graph.columns import Column, Matrix
from engram.processors.graph.polarity import Polarity, polarity
from engram.processors.graph.terms import TermIndex
from engram.processors.graph.types import EdgeType, NodeType
from engram.processors.graph.vectors import NodeVectors
from engram.processors.rebac import USER_LAYER, node_instance
from engram.processors.trust.erasure import erased_by
from engram.schemas.records import LAYERS, NodeUpserted

NO_CODE = -1
# Types whose statements consolidation checks for contradictions.
STATEMENT_TYPES = frozenset({NodeType.FACT, NodeType.CORRECTION, NodeType.DECISION, NodeType.INFERENCE})


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """What a node row holds; ``owner`` is the user a USER-layer node belongs to."""

    node_type: NodeType
    layer: str = USER_LAYER
    owner: str | None = None
    session: str | None = None
    confidence: float = 1.0
    time_ms: int = 0
    text: str = ""
    instance: str | None = None  # as written; the row keeps processors.rebac.node_instance of it


class GraphStore:
    """See the module docstring. Not thread-safe: one worker thread feeds and queries it."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.texts: list[str] = []
        self.kinds: list[str] = []
        self.node_type = Column(np.int8, int(NodeType.EPISODE))
        self.layer = Column(np.int8, 0)
        self.owner = Column(np.int32, NO_CODE)
        self.home = Column(np.int32, NO_CODE)  # the layer instance the node lives in, coded
        self.session = Column(np.int32, NO_CODE)
        self.confidence = Column(np.float32, 1.0)
        self.time_ms = Column(np.int64, 0)
        self.alive = Column(np.bool_, False)
        self.retracted = Column(np.bool_, False)
        self.dormant = Column(np.bool_, False)
        self.vectors: NodeVectors = Matrix()  # or a worker view's (processors/graph/vectors.py)
        self.terms = TermIndex()
        self.polarity: dict[int, Polarity] = {}
        self.records: dict[int, NodeUpserted] = {}  # an inference's last upsert (`keep_record`)
        self.users: dict[str, int] = {}
        self.instances: dict[str, int] = {}
        self.sessions: dict[str, int] = {}
        self.session_names: list[str] = []
        self.edge_index: dict[str, int] = {}
        self.src = Column(np.int32, 0)
        self.dst = Column(np.int32, 0)
        self.edge_type = Column(np.int8, 0)
        self.weight = Column(np.float32, 1.0)
        self.edge_alive = Column(np.bool_, False)
        self.version = 0

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def edge_count(self) -> int:
        return self.src.size

    # --- rows ------------------------------------------------------------------------------------

    def row(self, node_id: str) -> int:
        """The node's row, a dead placeholder when it was never seen."""
        found = self.index.get(node_id)
        if found is not None:
            return found
        row = len(self.ids)
        self.ids.append(node_id)
        self.texts.append("")
        self.kinds.append("")
        self.index[node_id] = row
        for column in (self.node_type, self.layer, self.owner, self.home, self.session, self.confidence, self.time_ms):
            column.grow()
        for flag in (self.alive, self.retracted, self.dormant):
            flag.grow()
        return row

    def keep_record(self, row: int, record: NodeUpserted) -> None:
        """Keep ``record``, the row's last upsert, while the row is an inference: consolidation
        promotes only inferences, by upserting the record again (processors/graph/apply.py). Other
        rows keep none: the worker's view holds every node's text and properties already (a record
        per node was 0.46 of the engine's 3.48 KB a node, traced over 5,000 bench turns)."""
        if self.node_type[row] == NodeType.INFERENCE:
            self.records[row] = record
        else:
            self.records.pop(row, None)

    def add_node(self, node_id: str, spec: NodeSpec, vector: npt.ArrayLike | None = None, kind: str = "") -> int:
        """Create or replace a node (its text is re-indexed when it changed)."""
        row = self.row(node_id)
        if self.texts[row] != spec.text:
            if self.texts[row]:
                self.terms.unindex(row, self.texts[row])
            stems = self.terms.index(row, spec.text) if spec.text else []
            self.polarity[row] = polarity(spec.text, stems)
            self.texts[row] = spec.text
        self.kinds[row] = kind
        self.node_type[row] = int(spec.node_type)
        self.layer[row] = LAYERS.index(spec.layer) if spec.layer in LAYERS else LAYERS.index(USER_LAYER)
        self.owner[row] = self._code(self.users, spec.owner)
        self.home[row] = self._code(self.instances, node_instance(spec.layer, spec.owner, spec.instance))
        self.session[row] = self._session_code(spec.session)
        self.confidence[row] = spec.confidence
        self.time_ms[row] = spec.time_ms
        self.alive[row] = True
        if vector is not None:
            self.vectors.set(row, vector)
        self.version += 1
        return row

    def remove_node(self, node_id: str) -> None:
        row = self.index.get(node_id)
        if row is not None and self.alive[row]:
            self.alive[row] = False
            self.version += 1

    def erase_owner(self, user_id: str) -> int:
        """Remove every node erasing ``user_id`` removes (processors/trust/erasure.py) and forget its
        content (text, terms, last upsert, vector); returns how many nodes there were."""
        code = self.users.get(user_id)
        if code is None:
            return 0
        owned = np.flatnonzero(self.owner.values == code).tolist()
        rows = [row for row in owned if erased_by(self.kinds[row], user_id, user_id)]
        for row in rows:
            self.alive[row] = False
            if self.texts[row]:
                self.terms.unindex(row, self.texts[row])
            self.texts[row] = ""
            self.records.pop(row, None)
            self.polarity.pop(row, None)
            self.vectors.clear(row)
        self.version += 1
        return len(rows)

    def flag(self, node_id: str, *, retracted: bool | None = None, dormant: bool | None = None) -> None:
        row = self.index.get(node_id)
        if row is None:
            return
        if retracted is not None:
            self.retracted[row] = retracted
        if dormant is not None:
            self.dormant[row] = dormant
        self.version += 1

    def add_edge(self, edge_id: str, src: str, dst: str, edge_type: EdgeType, weight: float = 1.0) -> int:
        """Create or update an edge (same id: same row)."""
        found = self.edge_index.get(edge_id)
        s, d = self.row(src), self.row(dst)
        if found is None:
            found = self.src.append(s)
            self.dst.append(d)
            self.edge_type.append(int(edge_type))
            self.weight.append(weight)
            self.edge_alive.append(True)
            self.edge_index[edge_id] = found
        else:
            self.src[found], self.dst[found] = s, d
            self.edge_type[found], self.weight[found] = int(edge_type), weight
            self.edge_alive[found] = True
        self.version += 1
        return found

    def remove_edge(self, edge_id: str) -> None:
        found = self.edge_index.get(edge_id)
        if found is not None and self.edge_alive[found]:
            self.edge_alive[found] = False
            self.version += 1

    def content_hash(self) -> str:
        """sha256 over the live nodes (id, type, layer, owner, confidence, time, flags, text) and
        live edges (id, ends, type, weight), each in id order: equal graphs hash equal."""
        digest = hashlib.sha256()
        owners = {code: name for name, code in self.users.items()}
        for node_id in sorted(self.ids):
            row = self.index[node_id]
            if not self.alive[row]:
                continue
            flags = (bool(self.retracted[row]), bool(self.dormant[row]))
            kind = (int(self.node_type[row]), int(self.layer[row]), owners.get(int(self.owner[row])))
            fields = (node_id, kind, round(float(self.confidence[row]), 6), int(self.time_ms[row]), flags)
            digest.update(repr((*fields, self.texts[row])).encode() + b"\n")
        for edge_id in sorted(self.edge_index):
            e = self.edge_index[edge_id]
            if self.edge_alive[e]:
                ends = (self.ids[int(self.src[e])], self.ids[int(self.dst[e])])
                digest.update(repr((edge_id, *ends, int(self.edge_type[e]), round(float(self.weight[e]), 6))).encode())
        return digest.hexdigest()

    # --- codes -----------------------------------------------------------------------------------

    @staticmethod
    def _code(codes: dict[str, int], name: str | None) -> int:
        if not name:
            return NO_CODE
        return codes.setdefault(name, len(codes))

    def _session_code(self, name: str | None) -> int:
        if not name:
            return NO_CODE
        code = self.sessions.get(name)
        if code is None:
            code = self.sessions[name] = len(self.session_names)
            self.session_names.append(name)
        return code

    def user_code(self, user_id: str) -> int:
        return self.users.get(user_id, NO_CODE)

    def instance_codes(self, names: Iterable[str]) -> list[int]:
        """The codes of those of ``names`` some node lives in."""
        return [code for name in names if (code := self.instances.get(name)) is not None]
