"""Both request paths (context and graph queries) pass the same gate before any retrieval.

`authorize` asks the worker's `Gate` (processors/trust/authorize.py) for the layers a decoded
request may read, at the time the broker received it (a replay checks a token at that time too).
It returns the request with those layers and without its token (which goes no further: not to the
compiler, not into a reply), or the request's dead letter with reason class ``unauthorized``.
"""

from __future__ import annotations

import time
from typing import Any, TypeVar, cast

from processors.intake import Rejected
from processors.trust.authorize import AuthorizationError, Gate
from schemas.record import RawRecord
from streams.commit import Output
from streams.edge import Admission

R = TypeVar("R")


def request_time_s(record: RawRecord) -> int:
    """When a request was received, by its broker timestamp; the clock when the record has none."""
    return record.timestamp_ms // 1000 if record.timestamp_ms > 0 else int(time.time())


def authorize(gate: Gate, admission: Admission[R], record: RawRecord, request: R, stage: str) -> R | Output:
    """The request as it may be served, or its dead letter (see the module docstring)."""
    fields = cast(dict[str, Any], request)
    try:
        layers = gate.layers(
            fields["user_id"], fields.get("token"), fields["authorized_layers"], request_time_s(record)
        )
    except AuthorizationError as exc:
        return admission.dead_letter(record, Rejected("unauthorized", str(exc), type(exc).__name__), stage)
    return cast(R, {**fields, "authorized_layers": sorted(layers), "token": None})
