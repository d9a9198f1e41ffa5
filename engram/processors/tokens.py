"""Token counting. ``default_token_counter()`` counts cl100k tokens with bpe-openai (Rust, exact)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from typing import Any, Final, Protocol, runtime_checkable

# bpe-openai refuses a text of more than 200,000 tokens (TokenLimitError). A token is at least one
# byte and a character at most four, so a piece of this many characters is always under the limit.
PIECE_CHARS: Final = 50_000


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
        """Exact up to `PIECE_CHARS` characters; a longer text (a large code file) is counted in
        pieces cut before a whitespace, which can differ from the whole's count by a token a cut."""
        encode = self._load().encode_ordinary
        if len(text) <= PIECE_CHARS:
            return len(encode(text))
        return sum(len(encode(piece)) for piece in pieces(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        # A plain loop: bpe-openai's encode_ordinary_batch submits one thread-pool future per text,
        # which costs more than counting a chat turn (~3 us).
        encode = self._load().encode_ordinary
        return [len(encode(text)) if len(text) <= PIECE_CHARS else self.count(text) for text in texts]


def pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of at most ``size`` characters, each cut before the last
    whitespace of its span when it has one (a word keeps its leading space, as cl100k splits)."""
    start = 0
    while len(text) - start > size:
        cut = max(text.rfind(" ", start + 1, start + size), text.rfind("\n", start + 1, start + size))
        end = cut if cut > start else start + size
        yield text[start:end]
        start = end
    yield text[start:]


_default: BpeTokenCounter | None = None


def default_token_counter() -> BpeTokenCounter:
    global _default
    if _default is None:
        _default = BpeTokenCounter()
    return _default
