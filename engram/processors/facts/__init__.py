"""Facts: extraction of candidate triples and CLIPS truth maintenance (NeuSymMS).

Write path: ``Extractor.extract(utterances) -> [CandidateFact]`` (``PatternExtractor`` offline,
``LLMExtractor`` optional), then ``FactReconciler.reconcile(state, candidates, ...)`` ->
FactDecided MemoryEvents, with ``state`` a per-user ``UserFacts`` (JSON-able via to_dict /
from_dict). Read path: ``facts_block(state, user)`` -> (block text, FactAccessed event), and
``FactReconciler.apply_access`` / ``prune`` for the lifecycle. ``believed_at`` answers "what did
we believe at t" from the decision log.
"""

from engram.processors.chat import ChatTransport
from engram.processors.facts.engine import FactPolicy, RuleEngine, RuleEngineError
from engram.processors.facts.extractor import Extractor, PatternExtractor, Utterance
from engram.processors.facts.llm import LLMExtractor, parse_response
from engram.processors.facts.model import CATEGORIES, CandidateFact, StoredFact, UserFacts
from engram.processors.facts.read import BLOCK_HEADER, facts_block
from engram.processors.facts.reconciler import CALLBACK, PAPER, FactReconciler, PromptContext, ReconcilerConfig
from engram.processors.facts.temporal import believed_at, fact_decisions, valid_at
from engram.processors.facts.turns import StateOwnerError, facts_from_turn

__all__ = [
    "BLOCK_HEADER",
    "CALLBACK",
    "CATEGORIES",
    "PAPER",
    "CandidateFact",
    "ChatTransport",
    "Extractor",
    "FactPolicy",
    "FactReconciler",
    "LLMExtractor",
    "PatternExtractor",
    "PromptContext",
    "ReconcilerConfig",
    "RuleEngine",
    "RuleEngineError",
    "StateOwnerError",
    "StoredFact",
    "Utterance",
    "UserFacts",
    "believed_at",
    "fact_decisions",
    "facts_block",
    "facts_from_turn",
    "parse_response",
    "valid_at",
]
