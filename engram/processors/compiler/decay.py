"""Memory strength S(t) = S0·e^(−λt) + β·C(n) (seed 001, eq. 3), per node kind.

t is the age at the *request's* event time, never the wall clock, so a replay gives the same scores.
λ is per hour; the seed's "decay factors" f per hour map to λ = −ln f (episodic 0.90 → 0.105/h:
0.10 after a day; semantic 0.9995 → 0.0005/h: 0.92 after a week, its Table 2). C(n) is a saturating
access/centrality count in [0, 1]: log1p(count) / log1p(saturation).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import numpy as np

HOUR_MS: Final = 3_600_000


def rate_from_factor(factor_per_hour: float) -> float:
    """λ per hour from a per-hour retention factor f in (0, 1]."""
    if not 0.0 < factor_per_hour <= 1.0:
        msg = f"retention factor must be in (0, 1], got {factor_per_hour}"
        raise ValueError(msg)
    return -math.log(factor_per_hour)


def _frozen(rates: Mapping[str, float]) -> Mapping[str, float]:
    return MappingProxyType(dict(rates))


@dataclass(frozen=True, slots=True)
class DecayConfig:
    """λ per hour by node kind (`default_rate` for kinds not listed), S0, β and C's saturation count."""

    rates: Mapping[str, float] = field(default_factory=lambda: _frozen({}))
    default_rate: float = 0.0
    s0: float = 1.0
    beta: float = 0.2
    saturation: int = 50
    unit_ms: int = HOUR_MS

    def rate(self, kind: str) -> float:
        return self.rates.get(kind, self.default_rate)


_EPISODIC: Final = ("turn", "user", "system", "assistant", "tool", "episodic", "event")
_SEMANTIC: Final = ("fact", "facts", "concept", "semantic", "rule", "procedural", "policy")

# The paper's rates: episodic memories are gone within days.
CONTEXTOS_DECAY: Final = DecayConfig(
    rates=_frozen(
        {**dict.fromkeys(_EPISODIC, rate_from_factor(0.90)), **dict.fromkeys(_SEMANTIC, rate_from_factor(0.9995))}
    ),
    default_rate=rate_from_factor(0.99),
)
# Long-horizon conversational memory (months between sessions): episodic half-life 30 days,
# semantic one year. Decay only scales the graph term of the value, never hides a relevant node.
CONVERSATIONAL_DECAY: Final = DecayConfig(
    rates=_frozen(
        {**dict.fromkeys(_EPISODIC, math.log(2) / (30 * 24)), **dict.fromkeys(_SEMANTIC, math.log(2) / (365 * 24))}
    ),
    default_rate=math.log(2) / (90 * 24),
)
NO_DECAY: Final = DecayConfig(beta=0.0)


def centrality(count: float, saturation: int) -> float:
    """C(n) in [0, 1]: grows with accesses or degree, saturating at `saturation`."""
    if count <= 0:
        return 0.0
    return min(1.0, math.log1p(count) / math.log1p(max(1, saturation)))


def strength(kind: str, age_ms: int, count: float, config: DecayConfig) -> float:
    """S(t) for a node of `kind`, `age_ms` old at the request time, accessed/linked `count` times.

    Negative ages (a node newer than the request, e.g. a late request) count as age 0.
    """
    t = max(0, age_ms) / config.unit_ms
    return config.s0 * math.exp(-config.rate(kind) * t) + config.beta * centrality(count, config.saturation)


def strengths(
    kinds: Sequence[str], ages_ms: Sequence[int], counts: Sequence[float], config: DecayConfig
) -> list[float]:
    """`strength` of many nodes at once (the compiler scores a whole pool): the same formula over
    numpy arrays, equal to it within floating-point rounding."""
    rates = np.array([config.rate(kind) for kind in kinds], dtype=np.float64)
    t = np.maximum(np.asarray(ages_ms, dtype=np.float64), 0.0) / config.unit_ms
    c = np.log1p(np.maximum(np.asarray(counts, dtype=np.float64), 0.0)) / math.log1p(max(1, config.saturation))
    s: list[float] = (config.s0 * np.exp(-rates * t) + config.beta * np.minimum(c, 1.0)).tolist()
    return s
