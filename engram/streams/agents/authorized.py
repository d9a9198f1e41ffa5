"""Both request paths (context and graph queries) pass the same gate before any retrieval.

`authorize` asks the worker's `Gate` (processors/trust/authorize.py) for the layers and layer
instances a decoded request may read, and the topic its answer may go to (its requester's own:
processors/trust/delivery.py), at the time the broker received it (a replay checks a token at that time too).
It returns the request with those layers and instances and without its token (which goes no further: not to the
compiler, not into a reply, not into the event log or a dead letter: what is archived is the
request re-encoded without it), or the request's dead letter with reason class ``unauthorized``.
`refusal_replies` then answers a refused (or invalid) request's known requester with the reason
(processors/trust/refusals.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from engram.processors.intake import Rejected
from engram.processors.trust.authorize import AuthorizationError, Gate
from engram.processors.trust.refusals import REFUSAL_CODES
from engram.schemas.record import RawRecord, Record
from engram.streams.codecs import Codec
from engram.streams.commit import Output
from engram.streams.edge import Admission, Admitted

R = TypeVar("R")
logger = logging.getLogger(__name__)


def request_time_s(record: Record[Any]) -> int:
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
    """The request as it may be served (None when refused), its dead letter and verdict otherwise,
    and the record the event log keeps when it is not the one received (the request without its
    token)."""

    request: R | None
    refusal: Output | None
    archived: RawRecord | None
    verdict: Rejected | None = None


def authorize(
    gate: Gate, admission: Admission[R], record: RawRecord, request: R, stage: str, codec: Codec, answers: str
) -> Authorized[R]:
    """See the module docstring; ``answers`` is the shared answer topic the reply topic is resolved
    under (processors/trust/delivery.py). A dead letter carries the request without its token too."""
    fields = cast(dict[str, Any], request)
    archived = without_token(record, request, codec)
    try:
        claimed, named = fields["authorized_layers"], fields.get("instances")
        access = gate.access(fields["user_id"], fields.get("token"), claimed, request_time_s(record), named)
        reply = access.reply_topic(answers, fields.get("reply_topic"))
    except AuthorizationError as exc:
        admission.metrics.authorization_denials.labels(stage).inc()
        verdict = Rejected("unauthorized", str(exc), type(exc).__name__, fields)
        return Authorized(None, admission.dead_letter(archived or record, verdict, stage), archived, verdict)
    instances = None if access.instances is None else sorted(access.instances)
    served = {
        **fields, "authorized_layers": sorted(access.layers), "instances": instances, "token": None,
        "reply_topic": reply,
    }  # fmt: skip
    return Authorized(cast(R, served), None, archived)


Reply = Callable[[Mapping[str, Any], str, str], bytes]  # (request, code, reason) -> the encoded answer


async def refusal_replies(
    gate: Gate, answers: str, verdicts: Sequence[Rejected], id_field: str, reply: Reply,
    ensure: Callable[[str], Awaitable[None]],
) -> list[Output]:  # fmt: skip
    """The error answer of each refused or invalid request whose requester is known
    (`Gate.refusal_topic` under the shared answer topic ``answers``), keyed by its user, on its
    topic, made to exist first (``ensure``). A request without its id, or whose topic cannot be
    made, gets none: its dead letter still tells."""
    outputs: list[Output] = []
    for verdict in verdicts:
        fields = verdict.decoded
        if verdict.reason_class not in REFUSAL_CODES or not isinstance(fields, Mapping) or not fields.get(id_field):
            continue
        topic = gate.refusal_topic(answers, fields.get("token"), fields.get("reply_topic"))
        if topic is None:
            continue
        try:
            await ensure(topic)
        except Exception:  # the refusal is dead-lettered already; a reply it cannot send stops nothing
            logger.warning("cannot answer a refused request on %s", topic, exc_info=True)
            continue
        key = str(fields.get("user_id") or "").encode()
        outputs.append(Output(topic, key, reply(fields, verdict.reason_class, verdict.reason)))
    return outputs


def placed(fields: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """Where an input writes: its (layer, user, instance) (an erasure request writes into its user's)."""
    return fields.get("layer", "USER"), fields.get("user_id"), fields.get("instance")


def authorize_writes(gate: Gate, admission: Admission[Any], admitted: Admitted[Any], codec: Codec) -> None:
    """Keep in ``admitted`` only the inputs their producer may write (`Gate.check_write`); each
    other one becomes a dead letter with reason class ``unauthorized``. A kept input that carried a
    token is archived re-encoded without it, and goes on without it."""
    kept: list[Record[Any]] = []
    for record in admitted.accepted:
        fields = cast(dict[str, Any], record.value)
        raw = admitted.raw.get(record.position)
        plain = without_token(raw, fields, codec) if raw is not None else None
        try:
            gate.check_write(fields.get("token"), *placed(fields), request_time_s(raw or record))
        except AuthorizationError as exc:
            admission.metrics.authorization_denials.labels(admission.stage).inc()
            verdict = Rejected("unauthorized", str(exc), type(exc).__name__)
            if raw is not None:
                admitted.dead.append(admission.dead_letter(plain or raw, verdict, admission.stage))
            continue
        if plain is not None:
            admitted.raw[record.position] = plain
        kept.append(record.decoded({**fields, "token": None}) if fields.get("token") else record)
    admitted.accepted[:] = kept
