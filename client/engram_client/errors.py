"""The SDK's errors: one base, `EngramClientError`, and typed subclasses an app can catch apart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class EngramClientError(RuntimeError):
    """A publish the broker refused, or an answer that did not come in time."""


class EngramInputError(EngramClientError, ValueError):
    """Something the client refuses to send, before it reaches the broker (an empty turn, a turn
    over `MAX_TURN_BYTES`, a record over the producer's ``message.max.bytes``, a bad role)."""


class EngramRefusedError(EngramClientError):
    """A worker refused the request and said why: ``code`` (``unauthorized`` or ``invalid``), the
    ``reason`` its dead letter carries too, and the ``request_id``."""

    def __init__(self, code: str, reason: str, request_id: str) -> None:
        super().__init__(f"request {request_id} refused ({code}): {reason}")
        self.code = code
        self.reason = reason
        self.request_id = request_id


class EngramAuthorizationError(EngramRefusedError):
    """The worker's gate refused the request: the token is expired or names a principal that may
    not read this memory, or the reply topic is not one it may receive on."""


class EngramInvalidRequestError(EngramRefusedError):
    """The worker refused the request as invalid (an empty query, a budget out of range, ...)."""


def refusal_of(answer: Mapping[str, Any]) -> EngramRefusedError | None:
    """The error an answer carries (a CompiledContext with ``error_code`` set), None for a context."""
    code = answer.get("error_code")
    if not code:
        return None
    kind = EngramAuthorizationError if code == "unauthorized" else EngramInvalidRequestError
    return kind(str(code), str(answer.get("error") or ""), str(answer.get("request_id", "")))


class EngramDecodeError(EngramClientError):
    """An answer this client received and cannot read: on ``topic`` at ``partition``/``offset``,
    for ``request_id`` when that much could be read (None otherwise). The ``reason`` says what is
    missing: most often the workers use a schema registry the client was not given
    (``ClientConfig.schema_registry_url``), or they write a schema version this client predates."""

    def __init__(self, topic: str, partition: int, offset: int, reason: str, request_id: str | None = None) -> None:
        about = f" for request {request_id}" if request_id else ""
        super().__init__(f"cannot read the answer{about} on {topic}/{partition}/{offset}: {reason}")
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.reason = reason
        self.request_id = request_id
