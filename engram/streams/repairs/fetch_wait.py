"""A fetch max-wait for Faust's worker consumer, which Faust hard-codes: a process-wide patch.

Faust 0.15.3 exposes no setting for the worker consumer's fetch max-wait:
``AIOKafkaConsumerThread._create_worker_consumer`` passes aiokafka ``fetch_max_wait_ms=1500``.
A broker that holds every fetch for its whole max-wait even when data arrives (tansu 0.6.0,
measured in infra/standins.py: `STANDIN_FETCH_MAX_WAIT_MS`) then makes every record wait up to
1.5 s. The Faust and aiokafka code the patch relies on is pinned by
tests/streams/test_faust_pins.py (``Consumer._new_consumer_thread``,
``AIOKafkaConsumerThread._create_worker_consumer``, ``AIOKafkaConsumer.start``).
"""

from __future__ import annotations

import aiokafka
from faust.transport.drivers import aiokafka as faust_aiokafka


def use_short_fetch_wait(max_wait_ms: int) -> None:
    """Make this process's Faust workers fetch with a ``max_wait_ms`` max-wait (ms).

    Faust exposes no setting for it (``AIOKafkaConsumerThread._create_worker_consumer`` passes
    ``fetch_max_wait_ms=1500``), so the worker consumer is created by a subclass of its consumer
    thread that lowers the value before the consumer starts (aiokafka hands it to its fetcher in
    ``AIOKafkaConsumer.start``). Process-wide: Faust's aiokafka ``Consumer`` class is patched, so
    every app created afterwards in this process fetches this way; calling again replaces the
    wait. Only `streams.profile.BrokerProfile.apply_worker_fetch_wait` calls it, for a profile
    that asks for it (the stand-in's, with `infra.standins.STANDIN_FETCH_MAX_WAIT_MS`).
    """

    class ShortFetchConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
        def _create_worker_consumer(self, transport: faust_aiokafka.Transport) -> aiokafka.AIOKafkaConsumer:
            consumer = super()._create_worker_consumer(transport)
            consumer._fetch_max_wait_ms = max_wait_ms
            return consumer

    def new_thread(self: faust_aiokafka.Consumer) -> faust_aiokafka.AIOKafkaConsumerThread:
        return ShortFetchConsumerThread(self, loop=self.loop, beacon=self.beacon)

    setattr(faust_aiokafka.Consumer, "_new_consumer_thread", new_thread)  # noqa: B010 - a method, patched once
