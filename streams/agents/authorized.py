"""Both request paths (context and graph queries) pass the same gate before any retrieval.

`authorize` asks the worker's `Gate` (processors/trust/authorize.py) for the layers a decoded
request may read, at the time the broker received it (a replay checks a token at that time too).
It returns the request with those layers and without its token (which goes no further: not to the
compiler, not into a reply, not into the event log or a dead letter: what is archived is the
request re-encoded without it), or the request's dead letter with reason class ``unauthorized``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from processors.intake import Rejected
from processors.trust.authorize import AuthorizationError, Gate
from schemas.record import RawRecord
from streams.codecs import Codec
from streams.commit import Output
from streams.edge import Admission

R = TypeVar("R")


def request_time_s(record: RawRecord) -> int:
    """When a request was received, by its broker timestamp; the clock when the record has none."""
    return record.timestamp_ms // 1000 if record.timestamp_ms > 0 else int(time.time())


def without_token(record: RawRecord, request: object, codec: Codec) -> RawRecord | None:
    """The record re-encoded without its bearer token, for the event log (None: it carried none).
    A token in an immutable log would outlive its revocation in every copy of the log."""
    fields = cast(dict[str, Any], request)
    if not fields.get("token"):
        return None
    return record.decoded(codec.encode({**fields, "token": None}))


@dataclass(frozen=True, slots=True)
class Authorized(Generic[R]):
    """The request as it may be served (None when refused), its dead letter otherwise, and the
    record the event log keeps when it is not the one received (the request without its token)."""

    request: R | None
    refusal: Output | None
    archived: RawRecord | None


def authorize(
    gate: Gate, admission: Admission[R], record: RawRecord, request: R, stage: str, codec: Codec
) -> Authorized[R]:
    """See the module docstring; a dead letter carries the request without its token too."""
    fields = cast(dict[str, Any], request)
    archived = without_token(record, request, codec)
    try:
        claimed = fields["authorized_layers"]
        layers = gate.layers(fields["user_id"], fields.get("token"), claimed, request_time_s(record))
    except AuthorizationError as exc:
        verdict = Rejected("unauthorized", str(exc), type(exc).__name__)
        return Authorized(None, admission.dead_letter(archived or record, verdict, stage), archived)
    return Authorized(cast(R, {**fields, "authorized_layers": sorted(layers), "token": None}), None, archived)
