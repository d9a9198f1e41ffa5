"""The Trace: the episodic DAG of turns, concepts (the Atlas) and their typed edges.

Pure: turns and code changes in, MemoryEvents out (``builder``); backtracking and provenance over
MemoryEvents (``navigate``); the LoCoMo reader lives in ``benchmarks.locomo_reader``. See
``builder``'s docstring for the node and edge rules and for how late and repeated turns are handled.
"""

from engram.processors.trace.builder import TraceBuilder, content_digest, event_node_id
from engram.processors.trace.config import BALANCED, COARSE, FINE, PRESETS, TraceConfig
from engram.processors.trace.emit import (
    CAUSAL,
    CHILD_OF,
    CODE_FILE_KIND,
    CONCEPT_KIND,
    EVENT_KIND,
    NEXT,
    REF,
    code_file_node_id,
)
from engram.processors.trace.navigate import Ancestor, TraceIndex, TraceNode
from engram.processors.trace.state import TraceState, state_from_dict, state_to_dict

__all__ = [
    "BALANCED",
    "CAUSAL",
    "CHILD_OF",
    "COARSE",
    "CODE_FILE_KIND",
    "CONCEPT_KIND",
    "EVENT_KIND",
    "FINE",
    "NEXT",
    "PRESETS",
    "REF",
    "Ancestor",
    "TraceBuilder",
    "TraceConfig",
    "TraceIndex",
    "TraceNode",
    "TraceState",
    "code_file_node_id",
    "content_digest",
    "event_node_id",
    "state_from_dict",
    "state_to_dict",
]
