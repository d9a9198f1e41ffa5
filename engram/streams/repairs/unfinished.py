"""An agent that cannot finish a batch stops the worker before Faust acknowledges the batch.

Faust's ``Stream.take_events`` acknowledges a batch in a ``finally`` when the agent's loop body
raises, and the agent's supervisor restarts the agent: the next commit then covers records that
were never processed (faust/streams.py, 0.15.3). Engram's agents are at-least-once, so a batch
they cannot finish is redelivered instead: the worker logs the failure and exits at once
(``os._exit``: no ``finally`` acknowledges, no shutdown commits), and the restarted worker, or the
group member that takes its partitions, reads the batch again from the last commit. Every sink is
idempotent, so what the failed batch had already written is written again unchanged.

What an agent can fail on is infrastructure: a store or the broker down past its retries, a full
disk. Bad input never gets this far; it is dead-lettered with its reason.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Final, NoReturn

logger = logging.getLogger(__name__)

EXIT_UNFINISHED_BATCH: Final = 70  # EX_SOFTWARE: the orchestrator restarts the worker


def exit_now(code: int) -> NoReturn:
    logging.shutdown()  # the failure's log line reaches its file before the process is gone
    os._exit(code)


@dataclass(frozen=True, slots=True)
class BatchGuard:
    """``async with guard:`` around an agent's work on one batch (see the module docstring).

    ``exit`` is the process exit (injectable for tests). Cancellation (a worker stopping) is not a
    failure and passes through.
    """

    agent: str
    exit: Callable[[int], NoReturn] = field(default=exit_now)

    async def __aenter__(self) -> BatchGuard:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _tb: TracebackType | None
    ) -> None:
        if error is None or not isinstance(error, Exception):
            return
        logger.critical(
            "agent %s could not finish a batch (%s: %s); the worker exits unacknowledged (code %d) so that "
            "the batch is read again after a restart",
            self.agent,
            type(error).__name__,
            error,
            EXIT_UNFINISHED_BATCH,
            exc_info=error,
        )
        self.exit(EXIT_UNFINISHED_BATCH)
