"""Token counting. ``default_token_counter()`` counts cl100k tokens with bpe-openai (Rust, exact)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable


class TokenCounter(Protocol):
    def count(self, text: str) -> int:
        """Exact number of tokens of ``text`` (cl100k unless the implementation says otherwise)."""
        ...


@runtime_checkable
class BatchTokenCounter(Protocol):
    """A TokenCounter that also counts many texts in one call (optional; callers check for it)."""

    def count(self, text: str) -> int: ...

    def count_batch(self, texts: Sequence[str]) -> list[int]: ...


class BpeTokenCounter:
    """cl100k_base token counts via bpe-openai; special-token text counts as ordinary text.

    The encoding's tables ship inside the bpe-openai wheel and load on first use.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.encoding_name = encoding
        self._encoding: Any = None

    def _load(self) -> Any:
        if self._encoding is None:
            with warnings.catch_warnings():
                # bpe-openai 0.1 reads its tables with the deprecated importlib.resources.open_binary.
                warnings.simplefilter("ignore", DeprecationWarning)
                import bpe_openai

                self._encoding = bpe_openai.get_encoding(self.encoding_name)
        return self._encoding

    def count(self, text: str) -> int:
        return len(self._load().encode_ordinary(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        # A plain loop: bpe-openai's encode_ordinary_batch submits one thread-pool future per text,
        # which costs more than counting a chat turn (~3 us).
        encode = self._load().encode_ordinary
        return [len(encode(text)) for text in texts]


_default: BpeTokenCounter | None = None


def default_token_counter() -> BpeTokenCounter:
    global _default
    if _default is None:
        _default = BpeTokenCounter()
    return _default
