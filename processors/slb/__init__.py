"""Semantic Lookaside Buffer: per-session, per-authorization cache of query neighbourhoods."""

from processors.slb.buffer import LookasideBuffer, SlbEntry, SlbLookup
from processors.slb.config import SLB_DEFAULT, SLB_LARGE, SLB_SMALL, SlbConfig
from processors.slb.lexical import NodeTerms, TermMatrix
from processors.slb.neighbourhood import NodeVectors, anchor_concept, atlas_children, rescore
from processors.slb.table import LookasideTable

__all__ = [
    "SLB_DEFAULT",
    "SLB_LARGE",
    "SLB_SMALL",
    "LookasideBuffer",
    "LookasideTable",
    "NodeTerms",
    "NodeVectors",
    "SlbConfig",
    "SlbEntry",
    "SlbLookup",
    "TermMatrix",
    "anchor_concept",
    "atlas_children",
    "rescore",
]
