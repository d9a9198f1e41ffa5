"""Semantic Lookaside Buffer: per-session, per-authorization cache of query neighbourhoods."""

from processors.retrieval.layout import NeighbourhoodTerms
from processors.slb.buffer import LookasideBuffer, SlbEntry, SlbLookup
from processors.slb.config import SLB_DEFAULT, SLB_LARGE, SLB_SMALL, SlbConfig
from processors.slb.lexical import NeighbourhoodLayout, NodeTerms, TermMatrix
from processors.slb.local import MatrixVectors, ScoringLayout
from processors.slb.neighbourhood import NodeVectors, anchor_concept, atlas_children, layout_for, rescore
from processors.slb.table import LookasideTable

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
    "layout_for",
    "rescore",
]
