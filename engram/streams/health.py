"""`/health` and `/ready`: is the worker process live, and may it be sent work.

- ``/health`` answers 200 while the process serves its web port (liveness).
- ``/ready`` answers 200 once the broker answers a metadata request, the stores were set up (the
  app is only built after `open_stores` connected them) and Faust's table recovery has finished;
  503 otherwise, with each check's state. The broker check runs off the loop and is reused for a
  few seconds, so a scraper polling ``/ready`` costs the broker little.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

BROKER_CHECK_TTL_S = 5.0


def broker_reachable(bootstrap: str, timeout_s: float = 2.0) -> bool:
    try:
        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=timeout_s)
    except KafkaException:
        return False
    return True


@dataclass
class Readiness:
    bootstrap: str
    _broker_ok: bool = False
    _checked_at: float = float("-inf")

    async def broker(self) -> bool:
        if time.monotonic() - self._checked_at > BROKER_CHECK_TTL_S:
            self._broker_ok = await asyncio.to_thread(broker_reachable, self.bootstrap)
            self._checked_at = time.monotonic()
        return self._broker_ok

    async def checks(self, tables_recovered: bool) -> dict[str, bool]:
        return {"broker": await self.broker(), "stores": True, "tables_recovered": tables_recovered}
