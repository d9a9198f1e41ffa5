"""Start a worker's input partitions without dropping records: a fix for a Faust recovery race.

Measured here (tests/e2e/test_trace_e2e.py, a worker SIGKILLed and restarted over a backlog, with
fetch and delivery logged): at the end of a table recovery, Faust 0.15.3
(``Recovery.on_recovery_completed``, and ``_resume_streams`` for an app without tables)

1. makes the input partitions active while the flow is already running (table recovery resumed
   it), so records start flowing into the agents' queues;
2. seeks them to the committed offsets, which resets the read offset that the delivery loop
   then moves on past the records it is delivering; and
3. calls ``flow_control.resume()``, which *clears every agent queue*.

Records sitting in a queue at step 3 were never handed to an agent, and their redelivery after
the seek is filtered out as already read, so the restarted worker silently skipped them (7 of 31
restarts here, 2-26 records of each input partition). A client race, not the broker's: the same
order runs against any Kafka.

`ClearFirstRecovery` clears the queues first, while no input record can be in one, then makes the
inputs active, then seeks. The seek must come after the activation: while the inputs are inactive,
a fetch asked for no partition returns theirs too and Faust drops them with the fetch position
already past them (measured: a restarted worker never answered two requests); the seek rewinds
the position over them. What a delivery already in flight then filters out was delivered before,
except after such a drop, which `streams/gaps.py` reads back.
"""

from __future__ import annotations

import asyncio
from typing import Any

from faust.tables import TableManager
from faust.tables.recovery import Recovery


class ClearFirstRecovery(Recovery):
    """Faust's recovery with the end-of-recovery steps in a safe order (see module docstring).

    Both ways a recovery ends are overridden: `on_recovery_completed` (the app has tables) and
    `_resume_streams` (it has none). Each is Faust 0.15.3's body with `_start_inputs` in place of
    its resume-seek-clear sequence.
    """

    async def on_recovery_completed(self, generation_id: int = 0) -> None:
        app: Any = self.app
        self.log.info("Restore complete!")
        await app.on_rebalance_complete.send()
        self._set_recovery_ended()
        callbacks = [
            asyncio.ensure_future(
                table.on_recovery_completed(self.actives_for_table[table], self.standbys_for_table[table])
            )
            for table in self.tables.values()
        ]
        if callbacks:
            await asyncio.wait(callbacks)
        if app.consumer_generation_id != generation_id:
            self.log.warning(
                "Recovery rebalancing again (generation %s, not %s)", app.consumer_generation_id, generation_id
            )
            return
        await self._start_inputs()
        self.tables.on_actives_ready()
        if not app.assignor.assigned_standbys():
            self.tables.on_standbys_ready()
        app.on_rebalance_end()
        self.log.info("Worker ready")

    async def _resume_streams(self, generation_id: int = 0) -> None:
        app: Any = self.app
        await app.on_rebalance_complete.send()
        if app.consumer_generation_id != generation_id:
            self.log.warning("Recovery rebalancing again")
            return
        await self._start_inputs()
        self.tables.on_actives_ready()
        self.tables.on_standbys_ready()
        app.on_rebalance_end()
        self.log.info("Worker ready")

    async def _start_inputs(self) -> None:
        """Clear the agents' queues while no input record can be in one, make the inputs active,
        then seek them: the seek also re-reads anything the fetcher dropped while they were
        inactive, and nothing delivered after it can be cleared."""
        app: Any = self.app
        consumer = app.consumer
        assignment = consumer.assignment()
        app.flow_control.resume()  # clears the agents' queues: none holds an input record yet
        consumer.resume_flow()
        consumer.resume_partitions({tp for tp in assignment if not self._is_changelog_tp(tp)})
        if assignment:
            self.log.info("Seek stream partitions to committed offsets.")
            await self._wait(consumer.perform_seek(), timeout=app.conf.broker_request_timeout)
        self.completed.set()
        await app._fetcher.maybe_start()


class ClearFirstTables(TableManager):
    """Faust's table manager, recovering with `ClearFirstRecovery`. Set as the app's
    ``TableManager`` setting (streams/app.py: faust_settings)."""

    @property
    def recovery(self) -> Recovery:
        if self._recovery is None:
            self._recovery = ClearFirstRecovery(self.app, self, beacon=self.beacon, loop=self.loop)
        return self._recovery
