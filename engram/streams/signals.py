"""Typed receivers of Faust's partition signals (``on_partitions_assigned`` / ``_revoked``).

Faust sends each signal with the partitions as its one argument (the whole assignment, since its
rebalance is eager); a receiver must also accept the ``signal`` keyword. `on_partitions` adapts a
plain ``async def handle(partitions)`` to that shape, so the wiring states what it does with them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from faust.types import TP
from mode import Signal

PartitionsHandler = Callable[[Iterable[TP]], Awaitable[None]]


def on_partitions(signal: Signal[set[TP]], handle: PartitionsHandler) -> None:
    """Connect ``handle`` to a Faust partition signal."""

    async def receive(_sender: Any, /, *args: Any, signal: Any, **_kwargs: Any) -> None:
        partitions: Iterable[TP] = args[0] if args else ()
        await handle(partitions)

    signal.connect(receive)
