"""The deterministic, offline router: lexical features and ordered rules, every decision explained.

Features (counts): code tokens (`name()`, file extensions, CamelCase and snake_case identifiers,
backticks, code words), thematic cues ("why", "how does", "compare", "relationship", "over time"),
research cues ("investigate", "analyze", "history of", "across"), factual question openers
("what/who/when/where/which/how many"), locate cues ("find", "where is", "which file"), and length.

Rules, in order: CODE when the code score reaches `code_threshold`; RESEARCH when research cues are
present, or thematic cues in a long query; THEMATIC on thematic cues; otherwise FACTUAL.
Intent: the hint if valid, else locate cues → locate, System 2 routes → explore, else answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from engram.processors.router.decision import Intent, Route, RouteDecision, parse_intent

_CALL = re.compile(r"\b[A-Za-z_][A-Za-z0-9_.]*\(\)?")
_FILE = re.compile(r"\b[\w/.-]+\.(?:py|js|ts|tsx|jsx|java|go|rs|c|cc|cpp|h|hpp|rb|kt|cs|sql|yaml|yml|json|toml)\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_BACKTICK = re.compile(r"`[^`]+`")
_CODE_WORDS: Final = frozenset(
    [
        "function",
        "method",
        "class",
        "module",
        "import",
        "exception",
        "traceback",
        "stacktrace",
        "compile",
        "compiler",
        "refactor",
        "bug",
        "debug",
        "api",
        "endpoint",
        "subclass",
        "override",
        "overrides",
        "inherits",
        "calls",
        "variable",
        "codebase",
        "repo",
        "repository",
        "commit",
    ]
)
_THEMATIC: Final = (
    r"\bwhy\b",
    r"\bhow (?:does|did|do|has|have|is|was|were|can|could|should)\b",
    r"\bcompare\b",
    r"\bcomparison\b",
    r"\bdifference between\b",
    r"\brelationship\b",
    r"\brelated\b",
    r"\bover time\b",
    r"\bevolv",
    r"\bchanged?\b",
    r"\btrend",
    r"\bthemes?\b",
    r"\bpatterns?\b",
    r"\bimpact\b",
    r"\bsummar",
    r"\bin common\b",
    r"\bboth\b",
)
_RESEARCH: Final = (
    r"\binvestigat",
    r"\banaly[sz]",
    r"\bresearch\b",
    r"\bhistory of\b",
    r"\bacross\b",
    r"\ball (?:the|of)\b",
    r"\bend[- ]to[- ]end\b",
    r"\broot cause\b",
    r"\btimeline\b",
)
_FACTUAL_OPENERS: Final = re.compile(
    r"^\s*(?:what|who|whom|when|where|which|how (?:many|much|long|old)|is|are|did|does|do|was|were|has|have)\b",
    re.IGNORECASE,
)
_LOCATE: Final = (r"\bfind\b", r"\bwhere is\b", r"\bwhere did\b", r"\bwhich file\b", r"\blocate\b", r"\bshow me\b")


@dataclass(frozen=True, slots=True)
class RuleRouterConfig:
    code_threshold: float = 2.0
    long_query_words: int = 18


def _count(patterns: tuple[str, ...], text: str) -> int:
    return sum(1 for p in patterns if re.search(p, text))


def features(query: str) -> dict[str, float]:
    """The lexical features of a query (counts), deterministic and cheap."""
    lower = query.lower()
    words = re.findall(r"[A-Za-z0-9_]+", query)
    calls = [m for m in _CALL.findall(query) if m.endswith("(") or m.endswith("()")]
    code_words = sum(1 for w in words if w.lower() in _CODE_WORDS)
    return {
        "calls": float(len(calls)),
        "files": float(len(_FILE.findall(query))),
        "camel": float(len(_CAMEL.findall(query))),
        "snake": float(len(_SNAKE.findall(query))),
        "backticks": float(len(_BACKTICK.findall(query))),
        "code_words": float(code_words),
        "thematic": float(_count(_THEMATIC, lower)),
        "research": float(_count(_RESEARCH, lower)),
        "factual_opener": 1.0 if _FACTUAL_OPENERS.match(query) else 0.0,
        "locate": float(_count(_LOCATE, lower)),
        "words": float(len(words)),
    }


def code_score(f: dict[str, float]) -> float:
    """Strong signals (calls, files, backticks) weigh 2, identifiers and code words 1."""
    return 2 * (f["calls"] + f["files"] + f["backticks"]) + f["camel"] + f["snake"] + f["code_words"]


class RuleRouter:
    def __init__(self, config: RuleRouterConfig | None = None) -> None:
        self.config = config or RuleRouterConfig()

    def route(self, query: str, intent_hint: str | None) -> RouteDecision:
        f = features(query)
        score = code_score(f)
        f["code_score"] = score
        route, why = self._classify(f, score)
        intent, intent_why = self._intent(intent_hint, f, route)
        reason = f"{route.value} → {route.system}: {why}; intent {intent.value} ({intent_why})"
        return RouteDecision(route, intent, reason, f)

    def _classify(self, f: dict[str, float], score: float) -> tuple[Route, str]:
        cfg = self.config
        if score >= cfg.code_threshold:
            return Route.CODE, f"code score {score:g} ≥ {cfg.code_threshold:g} (calls, files, identifiers, code words)"
        if f["research"] > 0:
            return Route.RESEARCH, f"{int(f['research'])} research cue(s)"
        if f["thematic"] > 0 and f["words"] >= cfg.long_query_words:
            return Route.RESEARCH, f"thematic cues in a long query ({int(f['words'])} words)"
        if f["thematic"] > 0:
            return Route.THEMATIC, f"{int(f['thematic'])} thematic cue(s) (why/how/compare/relationship/over time)"
        if f["factual_opener"] > 0:
            return Route.FACTUAL, "a direct question (what/who/when/where/which) with no relational cue"
        return Route.FACTUAL, "no code, thematic or research cue: a direct lookup"

    @staticmethod
    def _intent(hint: str | None, f: dict[str, float], route: Route) -> tuple[Intent, str]:
        parsed = parse_intent(hint)
        if parsed is not None:
            return parsed, "from intent_hint"
        suffix = f", unknown hint {hint!r} ignored" if hint else ""
        if f["locate"] > 0:
            return Intent.LOCATE, "locate cue" + suffix
        if route in (Route.THEMATIC, Route.RESEARCH):
            return Intent.EXPLORE, "System 2 route" + suffix
        return Intent.ANSWER, "default" + suffix
