"""Semantic Lookaside Buffer: per-session, per-authorization cache of query neighbourhoods."""

from engram.processors.retrieval.layout import NeighbourhoodTerms
from engram.processors.slb.buffer import LookasideBuffer, SlbEntry, SlbLookup
from engram.processors.slb.config import SLB_DEFAULT, SLB_LARGE, SLB_SMALL, SlbConfig
from engram.processors.slb.lexical import NeighbourhoodLayout, NodeTerms, TermMatrix
from engram.processors.slb.local import MatrixVectors, ScoringLayout
from engram.processors.slb.neighbourhood import (
    NodeVectors,
    anchor_concept,
    atlas_children,
    layout_for,
    rescore,
    serves_now,
)
from engram.processors.slb.table import LookasideTable, epoch_key

__all__ = [
    "SLB_DEFAULT",
    "SLB_LARGE",
    "SLB_SMALL",
    "LookasideBuffer",
    "LookasideTable",
    "MatrixVectors",
    "NeighbourhoodLayout",
    "NeighbourhoodTerms",
    "NodeTerms",
    "NodeVectors",
    "ScoringLayout",
    "SlbConfig",
    "SlbEntry",
    "SlbLookup",
    "TermMatrix",
    "anchor_concept",
    "atlas_children",
    "epoch_key",
    "layout_for",
    "rescore",
    "serves_now",
]
