"""Token counting protocol. The default implementation counts cl100k tokens with bpe-openai."""

from __future__ import annotations

from typing import Protocol


class TokenCounter(Protocol):
    def count(self, text: str) -> int:
        """Exact number of tokens of ``text`` (cl100k unless the implementation says otherwise)."""
        ...
