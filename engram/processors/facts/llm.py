"""The optional LLM extractor: prompt (prompts.py), transport (injected), response parsing.

Parsing and validation are pure. Any failure (transport, HTTP, JSON, schema) degrades to no
facts and a reason, never an exception: memory simply does not update (NeuSymMS VI.B).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from engram.processors.chat import ChatTransport, message_content
from engram.processors.facts.extractor import Utterance
from engram.processors.facts.model import SCOPES, CandidateFact, Scope
from engram.processors.facts.prompts import MAX_FACTS, PROMPT_VERSION, extraction_messages, request_body

LOG: Final = logging.getLogger(__name__)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


@dataclass(frozen=True, slots=True)
class ParseResult:
    facts: list[CandidateFact]
    problems: list[str]


def _items(content: str) -> list[object]:
    parsed = json.loads(_FENCE.sub("", content.strip()))
    if isinstance(parsed, dict) and isinstance(parsed.get("facts"), list):
        parsed = parsed["facts"]
    if not isinstance(parsed, list):
        msg = "content is not a JSON array of facts"
        raise ValueError(msg)
    return list(parsed)


def _fact(item: object, utt: Utterance) -> CandidateFact | str:
    if not isinstance(item, dict):
        return "item is not an object"
    subject, relation, value = item.get("subject", "user"), item.get("relation"), item.get("value")
    confidence, scope = item.get("confidence"), item.get("scope", "user")
    if not (isinstance(subject, str) and isinstance(relation, str) and relation.strip() and isinstance(value, str)):
        return f"bad subject/relation/value in {item!r}"
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        return f"bad confidence in {item!r}"
    if scope not in SCOPES:
        return f"bad scope {scope!r}"
    scope_id = {"user": "", "agent": utt.agent_id, "flow": utt.flow_id}[scope]
    if scope_id is None:
        return f"scope {scope} without an {scope} id in the turn: not attributed"
    checked: Scope = scope
    return CandidateFact(subject, relation, value, float(confidence), checked, scope_id, utt.source_event_ids)


def parse_response(response_text: str, utterances: Sequence[Utterance]) -> ParseResult:
    """Facts from a chat-completions response; at most MAX_FACTS, invalid items skipped."""
    anchor = utterances[-1] if utterances else Utterance("")
    sources = tuple(dict.fromkeys(s for u in utterances for s in u.source_event_ids))
    anchor = Utterance(anchor.text, anchor.role, anchor.agent_id, anchor.flow_id, sources)
    try:
        items = _items(message_content(response_text))
    except (ValueError, TypeError) as exc:
        return ParseResult([], [f"unparseable response: {exc}"])
    facts: list[CandidateFact] = []
    problems: list[str] = []
    if len(items) > MAX_FACTS:
        problems.append(f"{len(items)} facts returned; kept the first {MAX_FACTS}")
    for item in items[:MAX_FACTS]:
        fact = _fact(item, anchor)
        if isinstance(fact, str):
            problems.append(fact)
        else:
            facts.append(fact)
    return ParseResult(facts, problems)


class LLMExtractor:
    """Extractor over an OpenAI-compatible chat API; never raises, degrades to no facts."""

    name = f"llm-{PROMPT_VERSION}"

    def __init__(self, transport: ChatTransport, model: str) -> None:
        self.transport = transport
        self.model = model
        self.last_problems: list[str] = []

    def extract(self, utterances: Sequence[Utterance]) -> list[CandidateFact]:
        if not any(u.text.strip() for u in utterances):
            self.last_problems = []
            return []
        body = request_body(self.model, extraction_messages(utterances))
        try:
            text = self.transport.complete(body)
        except Exception as exc:  # any transport failure means "no facts this turn", by design
            self.last_problems = [f"transport failed: {type(exc).__name__}: {exc}"]
            LOG.warning("LLM fact extraction failed, no facts this turn: %s", self.last_problems[0])
            return []
        result = parse_response(text, utterances)
        self.last_problems = result.problems
        if result.problems:
            LOG.warning("LLM fact extraction problems: %s", "; ".join(result.problems))
        return result.facts
