"""Reply topics made on first use: a request's answer topic (processors/trust/delivery.py) may be
one no answer has gone to yet. The worker creates it (off the loop, once) before it sends; on a
Kafka with ACLs the operator may create tenants' topics instead, and the worker's principal then
needs no CREATE right (the topic exists, so nothing is created)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from engram.streams.admin import ensure_topics


@dataclass
class ReplyTopics:
    bootstrap: str
    partitions: int
    known: set[str] = field(default_factory=set)

    async def ensure(self, topic: str) -> None:
        """Create ``topic`` unless this worker knows it exists (raises `KafkaAdminError`)."""
        if topic in self.known:
            return
        await asyncio.to_thread(ensure_topics, self.bootstrap, [topic], self.partitions)
        self.known.add(topic)
