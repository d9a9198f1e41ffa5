"""The loop every batch agent runs: Faust batches, completed by gap repair, each under a `BatchGuard`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from streams.agents.unfinished import BatchGuard
from streams.gaps import GapRepair

BatchHandler = Callable[[Sequence[Any]], Awaitable[None]]


def register_batch_agent(
    app: Any,
    topic: Any,
    name: str,
    handle: BatchHandler,
    batch_max: int,
    within_s: float,
    gaps: GapRepair | None = None,
) -> Any:
    """Register agent ``name`` on ``topic``: ``handle`` gets each batch of Faust events (at most
    ``batch_max``, or what arrived within ``within_s``), completed by ``gaps`` when given."""
    guard = BatchGuard(name)

    async def run_batches(stream: Any) -> None:
        async for events in stream.take_events(batch_max, within=within_s):
            async with guard:  # a batch it cannot finish stops the worker unacknowledged
                # Records Faust skipped are read back and handled first, in offset order (streams/gaps.py).
                await handle(events if gaps is None else await gaps.complete(events))

    return app.agent(topic, name=name)(run_batches)
