"""Tunables of dreaming, as a frozen dataclass with named presets. Times are event-time ms.

- ``idle_ms``: a session with no turn for this long (event time) triggers a dream (T_idle).
- ``window_ms``: the tumbling window; crossing a window boundary triggers a dream.
- ``decay_ms``: T_decay of eq. 15: only episodes older than this (at the dream's time) may go dormant.
- ``min_cluster``: episodes a cluster needs before it is abstracted.
- ``gist_sentences``: sentences of a cluster's extractive gist.
- ``min_rule_sessions``: distinct sessions a recurring triple needs to become a rule ("regularly").
- ``min_entity_episodes``: episodes mentioning an entity (in >= 2 sessions) before it gets a profile.
- ``fact_ttl_ms``: short-term facts never accessed are pruned after this (NeuSymMS: 24 h).
- ``reawaken_weak``: a live search whose best relevance is below this is weak (a cache miss).
- ``reawaken_strong``: an archived node matching at least this strongly re-awakens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MINUTE_MS: Final = 60_000
HOUR_MS: Final = 60 * MINUTE_MS
DAY_MS: Final = 24 * HOUR_MS


@dataclass(frozen=True, slots=True)
class DreamConfig:
    idle_ms: int = 10 * MINUTE_MS
    window_ms: int = DAY_MS
    decay_ms: int = 7 * DAY_MS
    min_cluster: int = 3
    gist_sentences: int = 3
    min_rule_sessions: int = 3
    min_entity_episodes: int = 3
    fact_ttl_ms: int = DAY_MS
    reawaken_weak: float = 0.5
    reawaken_strong: float = 0.6

    def __post_init__(self) -> None:
        if min(self.idle_ms, self.window_ms, self.fact_ttl_ms) <= 0 or self.decay_ms < 0:
            msg = "idle_ms, window_ms and fact_ttl_ms must be > 0 and decay_ms >= 0"
            raise ValueError(msg)
        if self.min_cluster < 2 or self.gist_sentences < 1 or self.min_rule_sessions < 2:
            msg = "min_cluster and min_rule_sessions must be >= 2 and gist_sentences >= 1"
            raise ValueError(msg)


# Dream often, forget little: short windows, a month before anything may go dormant.
CAUTIOUS: Final = DreamConfig(window_ms=DAY_MS, decay_ms=30 * DAY_MS, min_cluster=4)
# The default.
BALANCED: Final = DreamConfig()
# Forget sooner: a day of decay, smaller clusters.
EAGER: Final = DreamConfig(decay_ms=DAY_MS, min_cluster=2, min_rule_sessions=2)

PRESETS: Final[dict[str, DreamConfig]] = {"cautious": CAUTIOUS, "balanced": BALANCED, "eager": EAGER}
