"""SLB settings and presets (seed 000 §3: K ∈ [16, 64] centroids, τ_hit ≈ 0.85)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MIN_CAPACITY: Final = 16
MAX_CAPACITY: Final = 64


@dataclass(frozen=True, slots=True)
class SlbConfig:
    """
    capacity: K centroids per (session, authorization set), 16–64.
    tau_hit: a hit needs best cosine similarity strictly above this.
    neighbourhood_size: candidate node ids cached per centroid (the "active neighbourhood").
    max_age_events: an entry older than this many new memory events of its user is dropped, so a
        cached neighbourhood never hides nodes that arrived since it was filled.
    prefetch_children: Atlas children (then members: the turns that REF it) of the hit concept staged
        into the entry on a hit.
    """

    capacity: int = 32
    tau_hit: float = 0.85
    neighbourhood_size: int = 64
    max_age_events: int = 256
    prefetch_children: int = 8

    def __post_init__(self) -> None:
        if not MIN_CAPACITY <= self.capacity <= MAX_CAPACITY:
            msg = f"SLB capacity must be in [{MIN_CAPACITY}, {MAX_CAPACITY}], got {self.capacity}"
            raise ValueError(msg)
        if not -1.0 <= self.tau_hit <= 1.0:
            msg = f"tau_hit must be a cosine similarity in [-1, 1], got {self.tau_hit}"
            raise ValueError(msg)
        if self.neighbourhood_size < 1 or self.max_age_events < 1 or self.prefetch_children < 0:
            msg = "neighbourhood_size and max_age_events must be >= 1, prefetch_children >= 0"
            raise ValueError(msg)


SLB_SMALL: Final = SlbConfig(capacity=16, neighbourhood_size=32)
SLB_DEFAULT: Final = SlbConfig()
SLB_LARGE: Final = SlbConfig(capacity=64, neighbourhood_size=128)
