"""An agent that cannot finish a batch stops the worker before the batch is acknowledged."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import NoReturn

import pytest

from engram.streams.repairs.unfinished import EXIT_UNFINISHED_BATCH, BatchGuard


class Exited(BaseException):
    """Stands for the process exit: nothing after it runs in a real worker."""


class FaustLikeStream:
    """Batches acknowledged in a ``finally``, as Faust's ``take_events`` does (faust/streams.py)."""

    def __init__(self, batches: list[list[int]]) -> None:
        self.batches = batches
        self.acked: list[int] = []

    async def take_events(self) -> AsyncIterator[list[int]]:
        for batch in self.batches:
            try:
                yield batch
            finally:
                self.acked.extend(batch)


class Recorder:
    def __init__(self, stream: FaustLikeStream) -> None:
        self.stream = stream
        self.exits: list[tuple[int, list[int]]] = []

    def exit(self, code: int) -> NoReturn:
        self.exits.append((code, list(self.stream.acked)))
        raise Exited


async def run_agent(stream: FaustLikeStream, guard: BatchGuard, fail_on: int | None) -> list[int]:
    done: list[int] = []
    async for batch in stream.take_events():
        async with guard:
            if fail_on in batch:
                msg = "the store is down past its retries"
                raise OSError(msg)
            done.extend(batch)
    return done


def test_a_failed_batch_exits_before_it_is_acknowledged() -> None:
    stream = FaustLikeStream([[0, 1], [2, 3], [4, 5]])
    recorder = Recorder(stream)
    with pytest.raises(Exited):
        asyncio.run(run_agent(stream, BatchGuard("engram.test", exit=recorder.exit), fail_on=3))
    # At the exit only the batch before the failure was acknowledged: [2, 3] is read again.
    assert recorder.exits == [(EXIT_UNFINISHED_BATCH, [0, 1])]


def test_finished_batches_never_exit() -> None:
    stream = FaustLikeStream([[0, 1], [2, 3]])
    recorder = Recorder(stream)
    done = asyncio.run(run_agent(stream, BatchGuard("engram.test", exit=recorder.exit), fail_on=None))
    assert done == [0, 1, 2, 3] and stream.acked == [0, 1, 2, 3] and recorder.exits == []


def test_a_stopping_worker_is_not_a_failure() -> None:
    stream = FaustLikeStream([[0, 1]])
    recorder = Recorder(stream)

    async def cancelled() -> None:
        async for _batch in stream.take_events():
            async with BatchGuard("engram.test", exit=recorder.exit):
                raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(cancelled())
    assert recorder.exits == []
