"""Tunables of the Trace, as a frozen dataclass with named presets.

Thresholds are cosines in the centred space of ``atlas.py`` (the user's running mean removed):
there, with the default static embedder, two turns of one LoCoMo conversation have median cosine
~0.0 and 99th percentile ~0.34. On the five LoCoMo conversations (370-680 turns each), BALANCED
(tau_ref 0.25) forms 52-85 concepts under 17-27 Atlas parents, the largest concept holding < 11%
of the turns; FINE (0.35) ~2-3x as many concepts, COARSE (0.2) 32-46.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True, slots=True)
class TraceConfig:
    """How the Trace builds nodes and edges.

    - ``tau_ref``: a turn REFs a concept when sim > tau_ref; with no such concept it founds one.
    - ``atlas_thresholds``: one threshold per coarser Atlas level (level 1, 2, ...), each lower than
      the one below; a new concept joins the best parent above the threshold (CHILD_OF) or founds one.
    - ``max_refs``: REF edges per turn (best first, all above tau_ref); only the best concept's
      centroid absorbs the turn.
    - ``max_concepts``: per user and level; when reached, no new concept forms (turns below
      tau_ref then get no REF edge).
    - ``concept_roles``: roles whose turns are grounded to concepts.
    - ``max_session_turns``: turns per session kept for ordering and de-duplication (oldest evicted).
    - ``max_sessions``: sessions per user kept in state, least recently used forgotten first.
    - ``max_pending_calls``: tool calls / early tool results remembered per user for CAUSAL linking.
    - ``answer_lookback``: how many turns back an assistant turn looks for the user turn it answers.
    - ``label_chars``: characters of the founding turn used as a concept's text label.
    - ``centre``: measure similarity after removing the user's running mean embedding (see
      ``atlas.py``; thresholds are then on the centred scale, where unrelated turns sit near 0).
    """

    tau_ref: float = 0.25
    atlas_thresholds: tuple[float, ...] = (0.15,)
    max_refs: int = 1
    max_concepts: int = 1024
    concept_roles: frozenset[str] = field(default_factory=lambda: frozenset({"user", "assistant"}))
    max_session_turns: int = 4096
    max_sessions: int = 256
    max_pending_calls: int = 1024
    answer_lookback: int = 64
    label_chars: int = 160
    centre: bool = True

    def __post_init__(self) -> None:
        levels = (self.tau_ref, *self.atlas_thresholds)
        if any(b >= a for a, b in zip(levels, levels[1:], strict=False)):
            msg = f"Atlas thresholds must decrease level by level, got {levels}"
            raise ValueError(msg)
        if self.max_refs < 1 or self.max_concepts < 1 or self.max_session_turns < 2:
            msg = "max_refs and max_concepts must be >= 1 and max_session_turns >= 2"
            raise ValueError(msg)

    @property
    def thresholds(self) -> tuple[float, ...]:
        """Similarity threshold per Atlas level, level 0 (the concepts turns REF) first."""
        return (self.tau_ref, *self.atlas_thresholds)


# Fine-grained anchors: many small concepts, a two-level Atlas above them.
FINE: Final = TraceConfig(tau_ref=0.35, atlas_thresholds=(0.22, 0.12), max_refs=2, max_concepts=2048)
# The default.
BALANCED: Final = TraceConfig()
# Few broad concepts; cheapest per turn.
COARSE: Final = TraceConfig(tau_ref=0.2, atlas_thresholds=(0.12,), max_concepts=512)

PRESETS: Final[dict[str, TraceConfig]] = {"fine": FINE, "balanced": BALANCED, "coarse": COARSE}
