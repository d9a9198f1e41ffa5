"""OpenAI-compatible chat completions, the pure half: the transport protocol and the reply's text.

The transport itself (HTTP) lives in `sinks/llm_http.py`; the optional LLM extractor and the
optional LLM router both take it injected.
"""

from __future__ import annotations

import json
from typing import Protocol


class ChatTransport(Protocol):
    """Sends one chat-completions body and returns the raw response text; raises on failure."""

    def complete(self, body: dict[str, object]) -> str: ...


def message_content(response_text: str) -> str:
    """The assistant message content of an OpenAI-compatible response; ValueError otherwise."""
    data = json.loads(response_text)
    if not isinstance(data, dict):
        msg = "response is not a JSON object"
        raise ValueError(msg)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        msg = "response has no choices"
        raise ValueError(msg)
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        msg = "response choice has no text content"
        raise ValueError(msg)
    return content
