"""OpenAI-compatible chat-completions transport for the optional LLM fact extractor and router.

Connects lazily (first call), not in the constructor. Every failure is a typed
``LLMTransportError``; the extractor turns it into "no facts this turn", the router into "rules
used". On the compile path the router's calls go through `DeadlineChat`: they run on the compile
path's `BlockingCalls` and are waited for at most a share of the request's budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from types import TracebackType

import httpx

from engram.processors.chat import ChatTransport
from engram.sinks.deadline import BlockingCalls, DeadlineExceededError


class LLMTransportError(RuntimeError):
    """The chat endpoint could not be reached, timed out or answered with an error status."""


class LLMDeadlineError(LLMTransportError):
    """The chat endpoint did not answer within the request's budget (or an earlier call still runs)."""


@dataclass(frozen=True, slots=True)
class LLMHttpConfig:
    base_url: str
    api_key: str | None = None
    timeout_s: float = 10.0
    path: str = "/chat/completions"


class OpenAIChatTransport:
    """``complete(body) -> response text`` over HTTP with httpx (synchronous: call it off the
    event loop, e.g. in an executor, from async code)."""

    def __init__(self, config: LLMHttpConfig) -> None:
        self.config = config
        self._client: httpx.Client | None = None

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
            self._client = httpx.Client(base_url=self.config.base_url, timeout=self.config.timeout_s, headers=headers)
        return self._client

    def complete(self, body: dict[str, object]) -> str:
        try:
            response = self._http().post(self.config.path, json=body)
        except httpx.HTTPError as exc:
            msg = f"chat request to {self.config.base_url} failed: {type(exc).__name__}: {exc}"
            raise LLMTransportError(msg) from exc
        if response.status_code != 200:
            msg = f"chat endpoint answered {response.status_code}: {response.text[:200]}"
            raise LLMTransportError(msg)
        return response.text

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> OpenAIChatTransport:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class DeadlineChat:
    """A `ChatTransport` whose calls run on ``calls``' pool and are waited for at most ``share`` of
    what is left of the request's budget (the rest is for retrieval); `LLMDeadlineError` past it."""

    transport: ChatTransport
    calls: BlockingCalls
    share: float = 0.5
    name: str = "LLM router"

    def complete(self, body: dict[str, object]) -> str:
        try:
            return self.calls.call(self.name, partial(self.transport.complete, body), share=self.share)
        except DeadlineExceededError as exc:
            raise LLMDeadlineError(str(exc)) from exc
