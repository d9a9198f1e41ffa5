"""The Code Brain (seed 000, section 4.2): a tree-sitter code graph, incremental on CodeChanges.

- ``CodeGraphBuilder(counter, config).apply(change, ref) -> list[MemoryEvent]`` (and ``apply_batch``):
  one file replaced or deleted, only what changed is emitted; state per repo in ``RepoCodeState``
  (``to_dict`` / ``from_dict``, JSON-able, for a Faust table keyed by repo).
- ``CodeGraph``: the in-memory graph those events build; ``seed_entities`` and ``code_neighbourhood``
  are the CODE route's structural retrieval (polymorphic dispatch families, inheritance order).
- ``extract`` / ``chunk_file``: the pure parsing and split-then-merge chunking underneath.
"""

from engram.processors.code.builder import CachedCounter, CodeGraphBuilder, apply_changes, turn_node_id
from engram.processors.code.chunks import BALANCED, COARSE, FINE, Chunk, ChunkingConfig, chunk_file
from engram.processors.code.extract import extract, extract_with_tree
from engram.processors.code.file_graph import (
    CALLS,
    CAUSAL,
    CHUNK,
    CLASS,
    CONTAINS,
    FUNCTION,
    HAS_METHOD,
    IMPORTS,
    INHERITS,
    METHOD,
    MODULE,
    UNRESOLVED,
    CodeGraphConfig,
)
from engram.processors.code.graph import (
    CodeGraph,
    CodeGraphView,
    CodeNeighbourhood,
    code_identifiers,
    code_neighbourhood,
    seed_entities,
)
from engram.processors.code.ids import entity_id
from engram.processors.code.languages import LANGUAGES, is_supported, language_for
from engram.processors.code.model import (
    CodeError,
    CodeStateError,
    Definition,
    FileSymbols,
    UnsupportedLanguageError,
)
from engram.processors.code.state import RepoCodeState

__all__ = [
    "BALANCED",
    "CALLS",
    "CAUSAL",
    "CHUNK",
    "CLASS",
    "COARSE",
    "CONTAINS",
    "FINE",
    "FUNCTION",
    "HAS_METHOD",
    "IMPORTS",
    "INHERITS",
    "LANGUAGES",
    "METHOD",
    "MODULE",
    "UNRESOLVED",
    "CachedCounter",
    "Chunk",
    "ChunkingConfig",
    "CodeError",
    "CodeGraph",
    "CodeGraphBuilder",
    "CodeGraphConfig",
    "CodeGraphView",
    "CodeNeighbourhood",
    "CodeStateError",
    "Definition",
    "FileSymbols",
    "RepoCodeState",
    "UnsupportedLanguageError",
    "apply_changes",
    "chunk_file",
    "code_identifiers",
    "code_neighbourhood",
    "entity_id",
    "extract",
    "extract_with_tree",
    "is_supported",
    "language_for",
    "seed_entities",
    "turn_node_id",
]
