"""`EngramClient`: publish turns and code changes, ask for compiled contexts, follow one's own.

Asyncio on the outside, confluent-kafka threads inside: the producer's delivery reports are served
by one thread, which resolves each publish's future (a publish returns once the broker has the
record), and one consumer thread reads the client's reply topic from its end, handing each context
to the `ask` waiting for its request id and to the `contexts` iterators of its user. With a token,
the reply topic is the principal's own (``engram.context.compiled.user.ada``: a worker with an
auth key answers there and nowhere else), or ``ClientConfig.reply_topic`` (e.g. a tenant's
``engram.context.compiled.org.acme``, which the worker accepts when the principal reads that org).
Records are keyed by user, as a worker expects (a user's memory lives on one partition).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from engram_client.codec import ClientCodecError, decode, encode

ROLES = ("user", "assistant", "tool", "system")
PINNED = ("policy", "procedural")
LAYERS = ("SYSTEM", "ORGANIZATION", "TEAM", "USER")


class EngramClientError(RuntimeError):
    """A publish the broker refused, or an answer that did not come in time."""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """``token``: the principal's bearer token, sent with every publish and request (a worker with
    an auth key needs it). ``topic_prefix``: the workers' ``ENGRAM_TOPIC_PREFIX``. ``reply_topic``:
    where answers are asked for (see the module docstring; None: the principal's own with a token,
    the shared topic without)."""

    bootstrap_servers: str
    token: str | None = None
    topic_prefix: str = ""
    producer_settings: Mapping[str, Any] = field(default_factory=dict)
    consumer_settings: Mapping[str, Any] = field(default_factory=dict)
    reply_topic: str | None = None

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
        self._producer = Producer({"bootstrap.servers": config.bootstrap_servers, "linger.ms": 2,
                                   "enable.idempotence": True, **config.producer_settings})  # fmt: skip
        self._stop = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads: list[threading.Thread] = []
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._followers: dict[str, list[asyncio.Queue[dict[str, Any]]]] = {}
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
        the team or org a TEAM or ORGANIZATION turn is written into (``team:payments``)."""
        if role not in ROLES or layer not in LAYERS:
            msg = f"role must be one of {ROLES} and layer one of {LAYERS}"
            raise ValueError(msg)
        turn_id = turn_id or f"{session_id}-{turn_index}"
        record = {
            "turn_id": turn_id, "user_id": user_id, "agent_id": agent_id, "flow_id": None,
            "session_id": session_id, "turn_index": turn_index, "role": role, "content": content,
            "event_time_ms": event_time_ms or int(time.time() * 1000), "layer": layer,
            "causal_parent_ids": list(causal_parent_ids), "tool_calls": [], "metadata": dict(metadata or {}),
            "instance": instance, "token": self.config.token,
        }  # fmt: skip
        await self._publish(self.config.topic("engram.turns"), user_id, encode("ConversationTurn", record))
        return turn_id

    async def publish_policy(
        self, text: str, *, instance: str, author: str, kind: str = "policy", event_time_ms: int | None = None,
    ) -> str:  # fmt: skip
        """Publish a policy (or, ``kind="procedural"``, a procedure) into a layer instance
        (``system``, ``org:acme``, ``team:payments``, ``user:ada``): the workers' compilers pin it
        for every request that may see it. Returns its turn id (the same text twice: the same id)."""
        if kind not in PINNED:
            msg = f"kind must be one of {PINNED}"
            raise ValueError(msg)
        scope, _, ident = instance.partition(":")
        layers = {"system": "SYSTEM", "org": "ORGANIZATION", "team": "TEAM", "user": "USER"}
        if scope not in layers or (scope != "system" and not ident):
            msg = f"{instance!r} is not system, org:ID, team:ID or user:ID"
            raise ValueError(msg)
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
        await self._publish(self.config.topic("engram.code"), user_id or repo, encode("CodeChange", record))
        return change_id

    async def _publish(self, topic: str, key: str, value: bytes) -> None:
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

        self._producer.produce(topic, value, key.encode(), on_delivery=report)
        await done

    def _serve_reports(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    # --- asking ----------------------------------------------------------------------------------

    async def ask(
        self, query: str, *, user_id: str, session_id: str, token_budget: int = 1000,
        layers: Sequence[str] = ("USER",), intent: str | None = None, timeout_s: float = 30.0,
    ) -> dict[str, Any]:  # fmt: skip
        """Ask for a compiled context and return it (a dict shaped as CompiledContext.avsc)."""
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
            await self._publish(
                self.config.topic("engram.context.requests"), user_id, encode("ContextRequest", request)
            )
            return await asyncio.wait_for(answer, timeout_s)
        except TimeoutError as exc:
            msg = f"no compiled context for {request_id} within {timeout_s}s (refused requests are dead-lettered)"
            raise EngramClientError(msg) from exc
        finally:
            self._waiting.pop(request_id, None)

    async def contexts(self, user_id: str) -> AsyncIterator[dict[str, Any]]:
        """Every compiled context for ``user_id`` from now on, as it arrives, each request's once."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._followers.setdefault(user_id, []).append(queue)
        try:
            while True:
                yield await queue.get()
        finally:
            self._followers[user_id].remove(queue)

    def _read_replies(self) -> None:
        topic = self.config.replies
        consumer = Consumer({"bootstrap.servers": self.config.bootstrap_servers,
                             "group.id": f"engram-client-{uuid.uuid4()}", "enable.auto.commit": False,
                             **self.config.consumer_settings})  # fmt: skip
        try:
            self._create_if_missing(topic)
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in partitions])
            consumer.poll(0.5)  # the assignment settles at the end offsets
            self._reading.set()
            while not self._stop.is_set():
                message = consumer.poll(0.1)
                if message is None or message.error() is not None:
                    continue
                with contextlib.suppress(ClientCodecError):
                    compiled = decode("CompiledContext", message.value() or b"")
                    if self._loop is not None:
                        self._loop.call_soon_threadsafe(self._dispatch, compiled)
        finally:
            self._reading.set()
            consumer.close()

    def _create_if_missing(self, topic: str) -> None:
        """A principal's reply topic exists once a worker has answered on it; before that, the client
        creates it (on a Kafka with ACLs the operator creates tenants' topics, and this finds it)."""
        admin = AdminClient({"bootstrap.servers": self.config.bootstrap_servers})
        if topic in admin.list_topics(timeout=10).topics:
            return
        for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=10).values():
            with contextlib.suppress(KafkaException):  # created meanwhile by a worker or another client
                future.result(timeout=10)

    def _dispatch(self, compiled: dict[str, Any]) -> None:  # on the loop
        if not self._answers.first(compiled["request_id"]):
            return  # a redelivered answer
        waiting = self._waiting.get(compiled["request_id"])
        if waiting is not None and not waiting.done():
            waiting.set_result(compiled)
        for queue in self._followers.get(compiled["user_id"], []):
            queue.put_nowait(compiled)
