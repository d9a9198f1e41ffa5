"""The time hierarchy of seed 002 (year → month → week → day → segment) and index-free search over it."""

from engram.processors.toc.index import LEVELS, Period, TocIndex, period_keys
from engram.processors.toc.publish import CONTAINS, TOC_KIND, Said, summary, toc_events, toc_node_id
from engram.processors.toc.search import TimeRange, TocBounds, TocSearchResult, time_anchor, toc_search

__all__ = [
    "CONTAINS",
    "LEVELS",
    "TOC_KIND",
    "Period",
    "Said",
    "TimeRange",
    "TocBounds",
    "TocIndex",
    "TocSearchResult",
    "period_keys",
    "summary",
    "time_anchor",
    "toc_events",
    "toc_node_id",
    "toc_search",
]
