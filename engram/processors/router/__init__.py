"""The cognitive router: FACTUAL → System 1, THEMATIC/RESEARCH → System 2, CODE → Code Brain."""

from engram.processors.router.decision import Intent, Route, RouteClassifier, RouteDecision, parse_intent
from engram.processors.router.llm import LlmRouter, RouterReplyError, build_router_prompt, parse_router_reply
from engram.processors.router.rules import RuleRouter, RuleRouterConfig, features

__all__ = [
    "Intent",
    "LlmRouter",
    "Route",
    "RouteClassifier",
    "RouteDecision",
    "RouterReplyError",
    "RuleRouter",
    "RuleRouterConfig",
    "build_router_prompt",
    "features",
    "parse_intent",
    "parse_router_reply",
]
