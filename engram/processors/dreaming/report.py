"""What one dream did: for metrics, the demo and the bench."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DreamReport:
    """What one dream did, for metrics, the demo and the bench."""

    user_id: str
    at_ms: int
    trigger: str
    clusters: int
    committed_concepts: int
    nodes: dict[str, int]  # consolidated nodes made, by kind
    rejected: dict[str, int]  # rejected candidates, by reason code
    dormant: int
    held_active: dict[str, int]  # active episodes φ keeps active, by reason
    toc_periods: int
