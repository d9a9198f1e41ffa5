"""HttpEmbedder: the ``Embedder`` protocol over an OpenAI-compatible ``POST /v1/embeddings``.

For production deployments with an embedding service (OpenAI, vLLM, TEI, Ollama's OpenAI API...).
It lives in ``sinks/`` because it does network I/O; ``processors/`` only sees the protocol.
Vectors are re-normalized to unit length (some servers do not normalize) and returned in input
order (the response's ``index`` field decides, not its list order). Retries 429 and 5xx answers and
transport errors with exponential backoff; other failures raise ``EmbeddingServiceError``.

On the compile path a remote embedder goes through `DeadlineEmbedder`: its calls run on the compile
path's `BlockingCalls` and are waited for at most a share of the request's budget (the compiler
then answers from the lexical index); its retries and backoff sleeps stay on that pool's thread.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import numpy as np

from engram.processors.embedding.base import Embedder, Vectors
from engram.sinks.deadline import BlockingCalls, DeadlineExceededError


class EmbeddingServiceError(RuntimeError):
    """The embedding service failed or answered something that is not an embeddings response."""


@dataclass(frozen=True, slots=True)
class HttpEmbedderConfig:
    """``base_url`` is the server root (``/v1/embeddings`` is appended); ``dim`` the expected width."""

    base_url: str
    model: str
    dim: int
    api_key: str | None = None
    batch_size: int = 256
    timeout_s: float = 30.0
    max_attempts: int = 4
    backoff_s: float = 0.2


class HttpEmbedder:
    def __init__(self, config: HttpEmbedderConfig, client: httpx.Client | None = None) -> None:
        self.config = config
        self._client = client
        self._owns_client = client is None

    @property
    def name(self) -> str:
        return f"http:{self.config.model}"

    @property
    def dim(self) -> int:
        return self.config.dim

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
            self._client = httpx.Client(base_url=self.config.base_url, timeout=self.config.timeout_s, headers=headers)
        return self._client

    def close(self) -> None:
        if self._client is not None and self._owns_client:
            self._client.close()
            self._client = None

    def __enter__(self) -> HttpEmbedder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self.config.batch_size):
            chunk = list(texts[start : start + self.config.batch_size])
            out[start : start + len(chunk)] = self._request(chunk)
        norms = np.sqrt((out * out).sum(axis=1, keepdims=True))
        result: Vectors = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return result

    def _request(self, texts: list[str]) -> Vectors:
        body = {"model": self.config.model, "input": texts}
        delay = self.config.backoff_s
        for attempt in range(1, self.config.max_attempts + 1):
            try:
                response = self._http().post("/v1/embeddings", json=body)
            except httpx.TransportError as exc:
                if attempt == self.config.max_attempts:
                    msg = f"embedding service unreachable after {attempt} attempts: {exc}"
                    raise EmbeddingServiceError(msg) from exc
            else:
                if response.status_code == 200:
                    return self._parse(response.json(), len(texts))
                if response.status_code != 429 and response.status_code < 500:
                    msg = f"embedding service answered {response.status_code}: {response.text[:200]}"
                    raise EmbeddingServiceError(msg)
                if attempt == self.config.max_attempts:
                    msg = f"embedding service answered {response.status_code} after {attempt} attempts"
                    raise EmbeddingServiceError(msg)
            time.sleep(delay)
            delay *= 2
        msg = "unreachable: the retry loop always returns or raises"
        raise EmbeddingServiceError(msg)

    def _parse(self, payload: Any, n: int) -> Vectors:
        try:
            rows = sorted(payload["data"], key=lambda item: int(item["index"]))
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"not an embeddings response: {str(payload)[:200]}"
            raise EmbeddingServiceError(msg) from exc
        if vectors.shape != (n, self.dim):
            msg = f"expected {n} vectors of {self.dim} dims, got shape {vectors.shape}"
            raise EmbeddingServiceError(msg)
        return vectors


@dataclass(frozen=True, slots=True)
class DeadlineEmbedder:
    """An `Embedder` whose ``embed`` runs on ``calls``' pool and is waited for at most ``share`` of
    what is left of the request's budget; `EmbeddingServiceError` past it. For the compiler only:
    outside a request (the view embedding nodes it applies) the call would wait just
    `BlockingCallsConfig.default_timeout_s`."""

    embedder: Embedder
    calls: BlockingCalls
    share: float = 0.5
    label: str = "embedder"

    @property
    def name(self) -> str:
        return self.embedder.name

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        try:
            return self.calls.call(self.label, partial(self.embedder.embed, list(texts)), share=self.share)
        except DeadlineExceededError as exc:
            raise EmbeddingServiceError(str(exc)) from exc
