"""The time hierarchy of seed 002 (year → month → week → day → segment) and index-free search over it."""

from processors.toc.index import LEVELS, Period, TocIndex, period_keys
from processors.toc.publish import CONTAINS, TOC_KIND, Said, summary, toc_events, toc_node_id
from processors.toc.search import TimeRange, TocBounds, TocSearchResult, time_anchor, toc_search

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
