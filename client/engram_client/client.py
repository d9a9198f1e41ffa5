"""`EngramClient`: publish turns and code changes, ask for compiled contexts, follow one's own.

Asyncio on the outside, confluent-kafka threads inside: the producer's delivery reports are served
by one thread, which resolves each publish's future (a publish returns once the broker has the
record), and one consumer thread reads the client's reply topic from its end, handing each context
to the `ask` waiting for its request id and to the `contexts` iterators of its user. With a token,
the reply topic is the principal's own (``engram.context.compiled.user.ada``: a worker with an
auth key answers there and nowhere else), or ``ClientConfig.reply_topic`` (e.g. a tenant's
``engram.context.compiled.org.acme``, which the worker accepts when the principal reads that org).
Records are keyed by user, as a worker expects (a user's memory lives on one partition).
Values are framed in the workers' codec mode (``ClientConfig.schema_registry_url``: the
registry's wire format, as a worker with ``ENGRAM_SCHEMA_REGISTRY_URL`` writes; unset:
single-object encoding), and answers are read in either; an answer that cannot be read fails the
`ask` it answers (or, when not even its request id can be read, every `ask` waiting) and the
`contexts` iterators of its user with `EngramDecodeError`: never a silent drop.

A request the worker refuses is answered with the reason, and `ask` raises it at once
(`EngramAuthorizationError`, `EngramInvalidRequestError`); a turn the worker would refuse for its
size or emptiness is refused here before it is sent (`EngramInputError`). Every Kafka client made
here (producer, consumer, admin) takes ``ClientConfig.security_settings``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from engram_client.codec import ClientCodec, ClientCodecError, RegistryError, leading_string
from engram_client.deadletters import DeadLetter, read_dead_letter
from engram_client.errors import EngramClientError, EngramDecodeError, EngramInputError, refusal_of

ROLES = ("user", "assistant", "tool", "system")
PINNED = ("policy", "procedural")
LAYERS = ("SYSTEM", "ORGANIZATION", "TEAM", "USER")
# The largest turn a worker takes, in UTF-8 bytes of content (the server's
# engram.processors.intake.MAX_TURN_BYTES; a test keeps them equal).
MAX_TURN_BYTES: Final = 256 * 1024
# librdkafka's default message.max.bytes: a larger record is refused before it is sent.
DEFAULT_MESSAGE_MAX_BYTES: Final = 1_000_000
# Answers are few and small, and `ask` waits on them. The stand-in broker holds a fetch for part of
# its max wait even when data arrives (Kafka answers at once, and there the wait only sets how often
# an idle client polls); Nagle off: a small request is not held behind the last one's acknowledgement.
# Measured on the stand-in (60 asks, compile p50 1.1 ms): ask p50 252 ms with librdkafka's defaults
# (500 ms wait, linger 2 ms here), 7.3 ms with these; a 5 ms wait gave 6.8 ms, 20 ms 11.9 ms.
# ``consumer_settings``/``producer_settings`` override them.
LOW_LATENCY_CONSUMER: Final[Mapping[str, Any]] = {"fetch.wait.max.ms": 10, "socket.nagle.disable": True}
LOW_LATENCY_PRODUCER: Final[Mapping[str, Any]] = {"linger.ms": 0, "socket.nagle.disable": True}
Role = Literal["producer", "consumer", "admin"]


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """``token``: the principal's bearer token, sent with every publish and request (a worker with
    an auth key needs it). ``topic_prefix``: the workers' ``ENGRAM_TOPIC_PREFIX``. ``reply_topic``:
    where answers are asked for (see the module docstring; None: the principal's own with a token,
    the shared topic without). ``security_settings``: librdkafka settings every client made here
    takes (``security.protocol``, ``sasl.*``, ``ssl.*``: SASL/SCRAM, TLS).
    ``producer_settings``/``consumer_settings``: more for one kind, over the defaults.
    ``schema_registry_url``: the workers' ``ENGRAM_SCHEMA_REGISTRY_URL`` (their codec mode; None:
    single-object encoding); ``schema_registry_settings``: more registry client settings."""

    bootstrap_servers: str
    token: str | None = None
    topic_prefix: str = ""
    producer_settings: Mapping[str, Any] = field(default_factory=dict)
    consumer_settings: Mapping[str, Any] = field(default_factory=dict)
    reply_topic: str | None = None
    security_settings: Mapping[str, Any] = field(default_factory=dict)
    schema_registry_url: str | None = None
    schema_registry_settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **settings: Any) -> ClientConfig:
        """The settings a worker reads, under the same names: ``ENGRAM_BOOTSTRAP_SERVERS``,
        ``ENGRAM_SCHEMA_REGISTRY_URL``, ``ENGRAM_TOPIC_PREFIX``, and the principal's ``ENGRAM_TOKEN``;
        ``settings`` set any other field (or override these)."""
        get = (os.environ if env is None else env).get
        found: dict[str, Any] = {
            "bootstrap_servers": get("ENGRAM_BOOTSTRAP_SERVERS", "127.0.0.1:9092"),
            "token": get("ENGRAM_TOKEN") or None,
            "topic_prefix": get("ENGRAM_TOPIC_PREFIX", ""),
            "schema_registry_url": get("ENGRAM_SCHEMA_REGISTRY_URL") or None,
        }
        return cls(**{**found, **settings})

    def client_settings(self, role: Role) -> dict[str, Any]:
        """The librdkafka settings of this client's ``role`` client: the broker and the security
        settings, then the role's defaults, then the role's own settings."""
        base = {"bootstrap.servers": self.bootstrap_servers, **self.security_settings}
        if role == "producer":
            return {**base, "enable.idempotence": True, **LOW_LATENCY_PRODUCER, **self.producer_settings}
        if role == "consumer":
            return {**base, "enable.auto.commit": False, **LOW_LATENCY_CONSUMER, **self.consumer_settings}
        return base

    def topic(self, name: str) -> str:
        return f"{self.topic_prefix}.{name}" if self.topic_prefix else name

    @property
    def replies(self) -> str:
        """The topic this client reads its answers from."""
        if self.reply_topic is not None:
            return self.reply_topic
        shared = self.topic("engram.context.compiled")
        if not self.token:
            return shared
        subject = token_subject(self.token)
        return f"{shared}.{subject.replace(':', '.').replace('@', '_')}"


def token_subject(token: str) -> str:
    """The ``sub`` claim of a JWT, read without verifying it (the worker verifies; the client only
    needs to know where its answers will go)."""
    try:
        payload = token.split(".")[1]
        return str(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sub"])
    except (IndexError, KeyError, TypeError, ValueError) as exc:
        msg = f"the token's subject cannot be read: {type(exc).__name__}"
        raise EngramClientError(msg) from exc


@dataclass
class FirstAnswers:
    """Which answers are new: a worker killed after sending an answer and before committing its
    request compiles the request again, and Kafka delivers both answers (at least once). The last
    ``size`` request ids are remembered; a repeat among them is not passed on."""

    size: int = 10_000
    _ids: OrderedDict[str, None] = field(default_factory=OrderedDict)

    def first(self, request_id: str) -> bool:
        if request_id in self._ids:
            return False
        self._ids[request_id] = None
        if len(self._ids) > self.size:
            self._ids.popitem(last=False)
        return True


class EngramClient:
    """Use as ``async with EngramClient(ClientConfig(...)) as engram: ...``."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        producer = config.client_settings("producer")
        self._producer = Producer(producer)
        self._max_bytes = int(producer.get("message.max.bytes", DEFAULT_MESSAGE_MAX_BYTES))
        self._codec = ClientCodec(config.schema_registry_url, config.schema_registry_settings)
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads: list[threading.Thread] = []
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._followers: dict[str, list[asyncio.Queue[dict[str, Any] | EngramDecodeError]]] = {}
        self._answers = FirstAnswers()
        self._reading = threading.Event()

    async def __aenter__(self) -> EngramClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the delivery-report and reply threads; returns once replies are being read."""
        self._loop = asyncio.get_running_loop()
        for target in (self._serve_reports, self._read_replies):
            thread = threading.Thread(target=target, daemon=True, name=f"engram-client-{target.__name__}")
            thread.start()
            self._threads.append(thread)
        await asyncio.to_thread(self._reading.wait, 30.0)

    async def close(self) -> None:
        await asyncio.to_thread(self._producer.flush, 10.0)
        self._stop.set()
        for thread in self._threads:
            await asyncio.to_thread(thread.join, 5.0)

    # --- publishing ------------------------------------------------------------------------------

    async def publish_turn(
        self, *, user_id: str, session_id: str, turn_index: int, content: str, role: str = "user",
        turn_id: str | None = None, event_time_ms: int | None = None, layer: str = "USER",
        agent_id: str | None = None, causal_parent_ids: Sequence[str] = (), metadata: Mapping[str, str] | None = None,
        instance: str | None = None,
    ) -> str:  # fmt: skip
        """Publish one ConversationTurn; returns its turn id once the broker has it. ``instance``:
        the team or org a TEAM or ORGANIZATION turn is written into (``team:payments``). Raises
        `EngramInputError` for what a worker would refuse: blank content, or more than
        `MAX_TURN_BYTES` of it."""
        if role not in ROLES or layer not in LAYERS:
            msg = f"role must be one of {ROLES} and layer one of {LAYERS}"
            raise EngramInputError(msg)
        check_content(content)
        turn_id = turn_id or f"{session_id}-{turn_index}"
        record = {
            "turn_id": turn_id, "user_id": user_id, "agent_id": agent_id, "flow_id": None,
            "session_id": session_id, "turn_index": turn_index, "role": role, "content": content,
            "event_time_ms": event_time_ms or int(time.time() * 1000), "layer": layer,
            "causal_parent_ids": list(causal_parent_ids), "tool_calls": [], "metadata": dict(metadata or {}),
            "instance": instance, "token": self.config.token,
        }  # fmt: skip
        await self._publish(self.config.topic("engram.turns"), user_id, "ConversationTurn", record)
        return turn_id

    async def publish_policy(
        self, text: str, *, instance: str, author: str, kind: str = "policy", event_time_ms: int | None = None,
    ) -> str:  # fmt: skip
        """Publish a policy (or, ``kind="procedural"``, a procedure) into a layer instance
        (``system``, ``org:acme``, ``team:payments``, ``user:ada``): the workers' compilers pin it
        for every request that may see it. Returns its turn id (the same text twice: the same id)."""
        if kind not in PINNED:
            msg = f"kind must be one of {PINNED}"
            raise EngramInputError(msg)
        scope, _, ident = instance.partition(":")
        layers = {"system": "SYSTEM", "org": "ORGANIZATION", "team": "TEAM", "user": "USER"}
        if scope not in layers or (scope != "system" and not ident):
            msg = f"{instance!r} is not system, org:ID, team:ID or user:ID"
            raise EngramInputError(msg)
        author = ident if scope == "user" else author
        time_ms = event_time_ms or int(time.time() * 1000)
        digest = hashlib.sha256(f"{instance}\x1f{kind}\x1f{text}".encode()).hexdigest()[:32]
        return await self.publish_turn(
            user_id=author, session_id=f"policies:{instance}", turn_index=time_ms // 1000 % 2**31, content=text,
            role="system", turn_id=f"policy-{digest}", event_time_ms=time_ms, layer=layers[scope],
            metadata={"pinned": kind}, instance=instance if scope in ("org", "team") else None,
        )  # fmt: skip

    async def publish_code_change(
        self, *, repo: str, path: str, language: str, content: str, commit: str, user_id: str | None = None,
        session_id: str | None = None, deleted: bool = False, event_time_ms: int | None = None,
        layer: str = "ORGANIZATION", causal_parent_ids: Sequence[str] = (), instance: str | None = None,
    ) -> str:  # fmt: skip
        """Publish one CodeChange (a file's new content, or its deletion); returns its change id."""
        change_id = f"{repo}:{commit}:{path}"
        record = {
            "change_id": change_id, "repo": repo, "path": path, "language": language, "commit": commit,
            "content": content, "deleted": deleted, "event_time_ms": event_time_ms or int(time.time() * 1000),
            "layer": layer, "causal_parent_ids": list(causal_parent_ids), "user_id": user_id, "session_id": session_id,
            "instance": instance, "token": self.config.token,
        }  # fmt: skip
        await self._publish(self.config.topic("engram.code"), user_id or repo, "CodeChange", record)
        return change_id

    async def _publish(self, topic: str, key: str, name: str, record: Mapping[str, Any]) -> None:
        try:  # the registry codec asks the registry once per schema: not on the loop
            value = (
                await asyncio.to_thread(self._codec.encode, name, topic, record)
                if self._codec.registry_url
                else self._codec.encode(name, topic, record)
            )
        except RegistryError as exc:
            raise EngramClientError(str(exc)) from exc
        except ClientCodecError as exc:  # the record breaks its contract
            raise EngramInputError(str(exc)) from exc
        if len(value) > self._max_bytes:
            msg = f"a {len(value)}-byte record for {topic} is over the producer's message.max.bytes ({self._max_bytes})"
            raise EngramInputError(msg)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def report(err: KafkaError | None, _: object) -> None:  # on the report thread
            def settle() -> None:
                if done.done():
                    return
                if err is None:
                    done.set_result(None)
                else:
                    done.set_exception(EngramClientError(f"{topic}: {err}"))

            with contextlib.suppress(RuntimeError):  # the loop closed
                loop.call_soon_threadsafe(settle)

        try:
            self._producer.produce(topic, value, key.encode(), on_delivery=report)
        except (KafkaException, BufferError) as exc:  # refused at once (the local queue is full, ...)
            msg = f"{topic}: {exc}"
            raise EngramClientError(msg) from exc
        await done

    def read_dead_letter(self, value: bytes, time_ms: int | None = None) -> DeadLetter:
        """A message value of the workers' dead-letter topic, read in their codec mode."""
        topic = self.config.topic("engram.deadletter")
        return read_dead_letter(value, codec=self._codec, topic=topic, time_ms=time_ms)

    def _serve_reports(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    # --- asking ----------------------------------------------------------------------------------

    async def ask(
        self, query: str, *, user_id: str, session_id: str, token_budget: int = 1000,
        layers: Sequence[str] = ("USER",), intent: str | None = None, timeout_s: float = 30.0,
    ) -> dict[str, Any]:  # fmt: skip
        """Ask for a compiled context and return it (a dict shaped as CompiledContext.avsc). A
        refusal raises at once: `EngramAuthorizationError` (the gate) or `EngramInvalidRequestError`;
        no answer within ``timeout_s`` raises `EngramClientError`."""
        request_id = str(uuid.uuid4())
        request = {
            "request_id": request_id, "user_id": user_id, "session_id": session_id, "query": query,
            "token_budget": token_budget, "authorized_layers": list(layers), "intent_hint": intent,
            "agent_id": "engram-client", "event_time_ms": int(time.time() * 1000), "token": self.config.token,
            "reply_topic": self.config.reply_topic,
        }  # fmt: skip
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answer
        try:
            await self._publish(self.config.topic("engram.context.requests"), user_id, "ContextRequest", request)
            return await asyncio.wait_for(answer, timeout_s)
        except TimeoutError as exc:
            msg = (
                f"no compiled context for {request_id} within {timeout_s}s: is a worker running on these topics? "
                "(a request with no token, or one the workers' key did not sign, is only dead-lettered)"
            )
            raise EngramClientError(msg) from exc
        finally:
            self._waiting.pop(request_id, None)

    async def contexts(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Every compiled context for ``user_id`` from now on, as it arrives, each request's once;
        raises `EngramDecodeError` at an answer for ``user_id`` that cannot be read."""
        queue: asyncio.Queue[dict[str, Any] | EngramDecodeError] = asyncio.Queue()
        self._followers.setdefault(user_id, []).append(queue)
        try:
            while True:
                got = await queue.get()
                if isinstance(got, EngramDecodeError):
                    raise got
                yield got
        finally:
            self._followers[user_id].remove(queue)

    def _read_replies(self) -> None:
        topic = self.config.replies
        consumer = Consumer({"group.id": f"engram-client-{uuid.uuid4()}", **self.config.client_settings("consumer")})
        try:
            self._create_if_missing(topic)
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in partitions])
            consumer.poll(0.5)  # the assignment settles at the end offsets
            self._reading.set()
            while not self._stop.is_set():
                message = consumer.poll(0.1)
                if message is not None and message.error() is None:
                    self._receive(message)
        finally:
            self._reading.set()
            consumer.close()

    def _create_if_missing(self, topic: str) -> None:
        """A principal's reply topic exists once a worker has answered on it; before that, the client
        creates it (on a Kafka with ACLs the operator creates tenants' topics, and this finds it)."""
        admin = AdminClient(self.config.client_settings("admin"))
        if topic in admin.list_topics(timeout=10).topics:
            return
        for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10).values():
            with contextlib.suppress(KafkaException):  # created meanwhile by a worker or another client
                future.result(timeout=10)

    def _receive(self, message: Any) -> None:  # on the reply thread
        """Decode one answer and hand it (or why it cannot be read) to the loop."""
        if self._loop is None:
            return
        value = message.value() or b""
        try:
            compiled = self._codec.decode("CompiledContext", message.topic(), value)
        except ClientCodecError as exc:
            failure = EngramDecodeError(message.topic(), message.partition(), message.offset(), str(exc),
                                        leading_string(value))  # fmt: skip
            key = message.key()
            self._loop.call_soon_threadsafe(self._undecodable, failure, key.decode(errors="replace") if key else None)
            return
        self._loop.call_soon_threadsafe(self._dispatch, compiled)

    def _undecodable(self, failure: EngramDecodeError, user_id: str | None) -> None:  # on the loop
        """Fail the `ask` the answer was for; when its request id cannot be read either, every
        `ask` waiting (its answer may be this one). The user's followers raise it too."""
        if failure.request_id is not None and failure.request_id not in self._waiting:
            waiting = []  # another client's answer on a shared topic: nothing here waits for it
        elif failure.request_id is not None:
            waiting = [self._waiting[failure.request_id]]
        else:
            waiting = list(self._waiting.values())
        for future in waiting:
            if not future.done():
                future.set_exception(failure)
        for queue in self._followers.get(user_id or "", []):
            queue.put_nowait(failure)

    def _dispatch(self, compiled: dict[str, Any]) -> None:  # on the loop
        if not self._answers.first(compiled["request_id"]):
            return  # a redelivered answer
        waiting = self._waiting.get(compiled["request_id"])
        refused = refusal_of(compiled)
        if waiting is not None and not waiting.done():
            if refused is not None:
                waiting.set_exception(refused)
            else:
                waiting.set_result(compiled)
        if refused is not None:
            return  # a refusal is no context to follow
        for queue in self._followers.get(compiled["user_id"], []):
            queue.put_nowait(compiled)


def check_content(content: str) -> None:
    """Raise `EngramInputError` for a turn's content a worker refuses: blank, or over `MAX_TURN_BYTES`."""
    if not content.strip():
        msg = "a turn's content is empty or only whitespace: a worker refuses it"
        raise EngramInputError(msg)
    size = len(content.encode("utf-8", "surrogatepass"))
    if size > MAX_TURN_BYTES:
        msg = f"a turn's content is {size} bytes of UTF-8, over the {MAX_TURN_BYTES} a worker takes"
        raise EngramInputError(msg)
