"""Versioned prompts for the optional LLM extractor (NeuSymMS IV.A). Pure functions: messages
in, messages out; the transport lives in sinks/llm_http.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engram.processors.facts.extractor import Utterance

PROMPT_VERSION: Final = "facts-extract-v1"
TEMPERATURE: Final = 0.1
MAX_FACTS: Final = 10
NEGATION_RELATIONS: Final = (
    "no_longer_has", "lost", "died", "stopped", "no_longer_works_at", "moved_from", "no_longer_likes",
    "broke_up_with", "divorced", "sold", "completed", "cancelled", "no_longer_uses", "no_longer_studies_at",
)  # fmt: skip

SYSTEM: Final = f"""You are a fact-extraction engine, not an assistant. Read the conversation snippet and
output ONLY a JSON array (no prose, no code fences) of at most {MAX_FACTS} atomic facts about the
user (or, for agent/flow scope, about that agent or workflow). Each item is an object:
{{"subject": "user" | "user.<relative>" | "agent" | "flow", "relation": snake_case verb phrase,
 "value": short string, "confidence": number 0..1, "scope": "user" | "agent" | "flow"}}.
Use relations such as name_is, lives_in, works_at, works_as, speaks_language, knows, likes,
dislikes, prefers, has_pet, has_<relative>, needs_to, working_on, plans_to, uses, is_feeling,
instruction, birthday_is, has_appointment, has_trip.
Encode loss, cessation or change as its own negation relation, never as a positive fact:
{", ".join(NEGATION_RELATIONS)}.
Only state what the text says; skip questions, hypotheticals and other people's opinions.
Return [] when there is no fact."""


def extraction_messages(utterances: Sequence[Utterance]) -> list[dict[str, str]]:
    """The chat messages for one snippet: the system prompt and the turns, labeled by role."""
    lines = [f"{u.role}: {u.text.strip()}" for u in utterances if u.text.strip()]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Conversation snippet:\n" + "\n".join(lines)},
    ]


def request_body(model: str, messages: list[dict[str, str]]) -> dict[str, object]:
    """An OpenAI-compatible /chat/completions body with the paper's constraints."""
    return {"model": model, "messages": messages, "temperature": TEMPERATURE, "n": 1}
