"""HttpEmbedder against a tiny OpenAI-compatible server on 127.0.0.1 (no external network)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest

from engram.infra.local_http import JsonHandler, serving
from engram.processors.embedding import Embedder
from engram.sinks.embedding_http import EmbeddingServiceError, HttpEmbedder, HttpEmbedderConfig

DIM = 4


class FakeEmbeddings(JsonHandler):
    """Answers /v1/embeddings with unnormalized vectors, in reversed list order (index says where)."""

    failures_left = 0
    requests: list[dict[str, object]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeEmbeddings.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if FakeEmbeddings.failures_left > 0:
            FakeEmbeddings.failures_left -= 1
            self._send(503, {"error": "busy"})
            return
        if body.get("model") == "missing":
            self._send(404, {"error": "no such model"})
            return
        data = [{"index": i, "embedding": [float(len(text)), 1.0, 0.0, 2.0]} for i, text in enumerate(body["input"])]
        self._send(200, {"object": "list", "data": list(reversed(data)), "model": body["model"]})

    def _send(self, status: int, payload: object) -> None:
        self.send_json(status, json.dumps(payload))


@pytest.fixture
def server_url() -> Iterator[str]:
    FakeEmbeddings.requests = []
    FakeEmbeddings.failures_left = 0
    with serving(FakeEmbeddings) as url:
        yield url


def test_vectors_come_back_in_order_and_normalized(server_url: str) -> None:
    config = HttpEmbedderConfig(base_url=server_url, model="m", dim=DIM, api_key="k", batch_size=2)
    with HttpEmbedder(config) as embedder:
        assert isinstance(embedder, Embedder)
        vectors = embedder.embed(["a", "bbb", "cc"])
    expected = np.array([[n, 1.0, 0.0, 2.0] for n in (1, 3, 2)], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected)
    assert [r["input"] for r in FakeEmbeddings.requests] == [["a", "bbb"], ["cc"]]
    assert {r["path"] for r in FakeEmbeddings.requests} == {"/v1/embeddings"}
    assert {r["auth"] for r in FakeEmbeddings.requests} == {"Bearer k"}


def test_busy_answers_are_retried(server_url: str) -> None:
    FakeEmbeddings.failures_left = 2
    config = HttpEmbedderConfig(base_url=server_url, model="m", dim=DIM, backoff_s=0.01)
    with HttpEmbedder(config) as embedder:
        assert embedder.embed(["x"]).shape == (1, DIM)
    assert len(FakeEmbeddings.requests) == 3


def test_client_errors_and_wrong_widths_raise(server_url: str) -> None:
    with (
        HttpEmbedder(HttpEmbedderConfig(base_url=server_url, model="missing", dim=DIM)) as embedder,
        pytest.raises(EmbeddingServiceError, match="404"),
    ):
        embedder.embed(["x"])
    with (
        HttpEmbedder(HttpEmbedderConfig(base_url=server_url, model="m", dim=8)) as embedder,
        pytest.raises(EmbeddingServiceError, match="8 dims"),
    ):
        embedder.embed(["x"])
