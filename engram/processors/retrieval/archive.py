"""What dreaming left behind, at retrieval time: re-awakening dormant nodes, spreading activation.

**Re-awakening** (seed 000 §5.3: "a Cache Miss that resolves to an archival node"). Dormant nodes
are out of the live indexes but stay in the view's archive rows. On a cache miss the compiler
searches the whole memory (``WholeMemory``: live and archived rows together, the requester's
visible blocks only, the same hybrid search); an archived node that ranks among the first ``top``
(``from_archive``) answers: the live rows held nothing as good there, and the match is among the
best of the whole memory. The compile path then re-awakens it (NodeReawakened). Searching live and
archived rows together costs what one search over all of them costs.

**Spreading activation** (seed 000 §5.4). A consolidated node (gist, rule, profile) in a ranking
brings in the episodes it cites (CITES/ABOUT), the ones closest to the query first, right after
it, each scored ``share`` × the consolidated node's score × its own cosine to the query.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any, Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import SearchableMemory
from engram.processors.retrieval.rows import Scope
from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.schemas.records import Layer

DREAM_KINDS: Final = frozenset({"gist", "rule", "profile"})
CITING_EDGES: Final = frozenset({"CITES", "ABOUT"})


@runtime_checkable
class ArchivedMemory(SearchableMemory, Protocol):
    """A memory whose searches can also cover the dormant rows (``MemoryView``)."""

    def is_dormant(self, node_id: str) -> bool: ...

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None,
        user_id: str | None = None, *, whole: bool = False,
    ) -> Sequence[Neighbour]: ...  # fmt: skip

    def vector_search(
        self, query: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer],
        kinds: Collection[str] | None = None, scope: Scope = "live",
    ) -> list[Candidate]: ...  # fmt: skip

    def text_search(
        self, query: str, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None,
        scope: Scope = "live",
    ) -> list[Candidate]: ...  # fmt: skip


class WholeMemory:
    """A memory seen with its archive: searches cover live and dormant rows, neighbours include
    dormant nodes along their own edges (not the edges dreaming contracted around them); everything
    else (node records, the optional rerank protocols) is the memory's own."""

    def __init__(self, memory: ArchivedMemory) -> None:
        self._memory = memory

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memory, name)

    def node(self, node_id: str) -> NodeRecord | None:
        return self._memory.node(node_id)

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]:
        return self._memory.neighbours(node_id, layers, edge_types, whole=True)

    def authorized_nodes(
        self, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None
    ) -> Iterator[NodeRecord]:
        return self._memory.authorized_nodes(viewer, layers, kinds)

    def vector_search(
        self, query: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer],
        kinds: Collection[str] | None = None,
    ) -> list[Candidate]:  # fmt: skip
        return self._memory.vector_search(query, k, viewer, layers, kinds, scope="all")

    def text_search(
        self, query: str, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None
    ) -> list[Candidate]:
        return self._memory.text_search(query, k, viewer, layers, kinds, scope="all")


def from_archive(memory: ArchivedMemory, ranking: Sequence[Candidate], top: int) -> list[Candidate]:
    """A whole-memory ranking with its dormant nodes kept only among the first ``top``: an archived
    node answers (and re-awakens) only when it is one of the best matches of the whole memory."""
    return [c for rank, c in enumerate(ranking) if rank < top or not memory.is_dormant(c.node_id)]


@runtime_checkable
class CitingMemory(Protocol):
    def node(self, node_id: str) -> NodeRecord | None: ...

    def visible_neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None, viewer: Viewer | None,
        user_id: str | None = None,
    ) -> Sequence[Neighbour]: ...  # fmt: skip

    def node_vectors(self, node_ids: Sequence[str]) -> npt.NDArray[np.float32]: ...


def cited(memory: CitingMemory, node_id: str, viewer: Viewer, layers: Collection[Layer]) -> list[str]:
    """The visible, searchable episodes a consolidated node cites (sorted ids)."""
    found = memory.visible_neighbours(node_id, layers, CITING_EDGES, viewer, viewer.user_id)
    out = {n.node_id for n in found if n.outgoing}
    return sorted(out)


def spread(
    memory: CitingMemory, ranking: Sequence[Candidate], query: npt.NDArray[np.float32] | None, viewer: Viewer,
    layers: Collection[Layer], *, per_node: int = 3, share: float = 0.9,
) -> list[Candidate]:  # fmt: skip
    """The ranking with each consolidated node followed by its ``per_node`` cited episodes closest
    to the query (episodes already ranked are not repeated)."""
    out: list[Candidate] = []
    seen = {c.node_id for c in ranking}
    for candidate in ranking:
        out.append(candidate)
        record = memory.node(candidate.node_id)
        if record is None or record.kind not in DREAM_KINDS:
            continue
        ids = [n for n in cited(memory, candidate.node_id, viewer, layers) if n not in seen]
        if not ids:
            continue
        sims = _cosines(memory, ids, query)
        order = sorted(range(len(ids)), key=lambda i: (-sims[i], ids[i]))[:per_node]
        for i in order:
            seen.add(ids[i])
            out.append(Candidate(ids[i], share * candidate.score * max(sims[i], 0.0), "spread"))
    return out


def _cosines(memory: CitingMemory, ids: list[str], query: npt.NDArray[np.float32] | None) -> list[float]:
    if query is None:
        return [1.0] * len(ids)
    vectors = memory.node_vectors(ids)
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q)) or 1.0
    return [float(v) for v in (vectors @ (q / norm))] if vectors.size else [0.0] * len(ids)
