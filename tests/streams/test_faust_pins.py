"""Pins on the Faust and aiokafka internals Engram re-implements or patches (STYLE.md, "Traps").

Each pin is the sha256 of one method's source as installed, read from its module's file (not from
the live class, which a patch may have replaced). Upgrading faust-streaming or aiokafka, or any
change to a pinned method, fails here with what to re-check; after re-checking, update the
version or the hash.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
from dataclasses import dataclass

import aiokafka
import faust
import pytest

FAUST_VERSION = "0.15.3"
AIOKAFKA_VERSION = "0.14.0"

RESUME = (
    "streams/repairs/recovery.py (ClearFirstRecovery) copies Faust's end of recovery with `_start_inputs` in "
    "place of its resume/seek/clear steps: copy the new body over, keep the order clear queues -> activate "
    "inputs -> seek, and re-run tests/streams/test_gaps_resume.py and tests/e2e/test_trace_e2e.py. If Faust "
    "now clears the queues before the inputs flow, drop ClearFirstTables."
)
FETCH_WAIT = (
    "streams/repairs/fetch_wait.use_short_fetch_wait (the STANDIN profile's worker_fetch_max_wait_ms) replaces "
    "Consumer._new_consumer_thread to build a consumer thread whose worker consumer gets a shorter "
    "`_fetch_max_wait_ms` than the hard-coded 1500. Check the patch still reaches the fetcher "
    "(tests/streams/test_profile.py); if Faust now has a setting for the wait, put it in the profile's "
    "Faust settings and drop the patch."
)

PAUSE = (
    "streams/repairs/pausing.py pauses the input partitions in aiokafka's client (on Faust's consumer thread, through "
    "`_ensure_consumer`), not in Faust's set of active partitions, because Faust's getmany skips the records "
    "of a fetched batch whose partition stopped being active, with aiokafka's position already past them; "
    "and aiokafka discards what it fetched of a paused partition without moving its position. Re-run "
    "tests/streams/test_flow.py; if Faust now keeps a batch whole, its own pause would do."
)

UNFINISHED = (
    "streams/repairs/unfinished.BatchGuard exits the worker before Faust acknowledges a batch, because "
    "take_events acknowledges every event of a batch in a `finally`, even when the agent's body raised. "
    "Re-run tests/streams/test_unfinished_batch.py and tests/e2e/test_unfinished_e2e.py; if Faust no longer "
    "acknowledges a failed batch, the guard may go."
)


@dataclass(frozen=True, slots=True)
class Pin:
    module: str
    qualname: str
    sha256: str
    recheck: str


PINS = (
    Pin(
        "faust.transport.consumer",
        "Consumer.getmany",
        "fb4700d31489b3b421bbff4583fe283f9c88adf422f47cd8075bc6e84d7c9fbb",
        PAUSE,
    ),
    Pin(
        "faust.transport.drivers.aiokafka",
        "AIOKafkaConsumerThread._ensure_consumer",
        "ab708b087b3476fdabdf0de16283523a05d75aaef3d48ca611ea592ccaa37aac",
        PAUSE,
    ),
    Pin(
        "aiokafka.consumer.fetcher",
        "FetchResult.check_assignment",
        "046226699097c91409831ca2bd5e3988c8376cc9dabc6f2e8cd3eeda2c0e8e74",
        PAUSE,
    ),
    Pin(
        "faust.streams",
        "Stream.take_events",
        "1e784df57c46331d1ae684c7fbc8f3657e944f5337088deecad8aa8e8c74a6e3",
        UNFINISHED,
    ),
    Pin(
        "faust.tables.recovery",
        "Recovery.on_recovery_completed",
        "2720e26cb703b2fa1746351bedbfe8b3a7b3e437724d7e684a26412d8d7922a5",
        RESUME,
    ),
    Pin(
        "faust.tables.recovery",
        "Recovery._resume_streams",
        "fec849656dbcea2c04c0734163cda039f660319d2dff164ae857ebe4a62bf1e8",
        RESUME,
    ),
    Pin(
        "faust.tables.recovery",
        "Recovery._build_highwaters",
        "881584f42842eb7e2d32fc6d3390c6b2ed669c7bc499ec567403e4b39cd56b2c",
        "streams/repairs/recovery.FetchedEndsRecovery corrects the changelog ends this builds (each the end the "
        "broker reports - 1) to the ends a fetch finds. Re-run tests/streams/test_ends.py.",
    ),
    Pin(
        "faust.tables.recovery",
        "Recovery._build_offsets",
        "f7626a56c3b2b33a9f1e3a58e9458ade97aece24ed0cd9be270a671a846b8cc7",
        "streams/repairs/recovery.ClearFirstRecovery resets a table store on disk that is past its changelog's end "
        "after this builds the start offsets (a table's persisted offset, or the changelog's earliest - 1). "
        "Re-run tests/streams/test_tablestore.py and tests/e2e/test_table_store_e2e.py.",
    ),
    Pin(
        "faust.tables.recovery",
        "Recovery._restart_recovery",
        "597f90c1743b6bb3bf5aa5cb3d73d234c70f4956e149cc292074f4abcbe83e9a",
        "streams/repairs/recovery.ClearFirstRecovery._build_offsets reuses the actives' changelog ends this builds "
        "just before it builds their start offsets. Re-run tests/e2e/test_view_snapshot_e2e.py.",
    ),
    Pin(
        "faust.tables.recovery",
        "Recovery._add",
        "a69d2a8f1d51a72d8c04d44d4dd20cc583201ddd46d0679904233d48326d6f3c",
        "streams/tablestore.DiskTableStore.persisted_offset is where this starts a changelog's recovery "
        "(the last offset the store on disk holds). Re-run tests/e2e/test_table_store_e2e.py.",
    ),
    Pin(
        "faust.tables.base",
        "Collection.apply_changelog_batch",
        "75bbb158de7b5c73985ecdd7b1a30b6ca4114eb4cc064530b8dd5b2c5ffce796",
        "streams/tablestore.DiskTableStore.apply_changelog_batch takes the recovered records from this, each "
        "with its raw key, value and offset. Re-run tests/streams/test_tablestore.py.",
    ),
    Pin(
        "faust.tables.base",
        "Collection.send_changelog",
        "423a646ec5e3b6b5fd127ce0a3428a064af60f0787795ee063fcb9e9030a858e",
        "streams/repairs/changelog.send_changelog_record serializes a changelog record as this does (the "
        "changelog topic's prepare_key/prepare_value with the table's serializers) and sends it through the "
        "worker's producer.",
    ),
    Pin(
        "faust.tables.manager",
        "TableManager.recovery",
        "2d1f5444084df68c75186cd39e6745cc66a0930e9042aa937e39a37495b9facf",
        "streams/repairs/recovery.ClearFirstTables.recovery builds ClearFirstRecovery the way this property "
        "builds Recovery.",
    ),
    Pin(
        "faust.transport.consumer",
        "Consumer.perform_seek",
        "b2fa31dd2a8784d3d2521d0b28701fe90c823529439012347b1a9dd4dc941b9b",
        "streams/repairs/recovery.rewind_uncommitted reads the `_read_offset` map this fills with the committed "
        "offsets (None or 0 = never committed) and seeks those partitions to their earliest offset.",
    ),
    Pin(
        "faust.transport.drivers.aiokafka",
        "Consumer._new_consumer_thread",
        "e3e2675bb60b2e9a3713c45a14170a78be506cea8a85dfafd666a3cff26748b4",
        FETCH_WAIT,
    ),
    Pin(
        "faust.transport.drivers.aiokafka",
        "AIOKafkaConsumerThread._create_worker_consumer",
        "684c167041ff0044ecec19b723d708ecbc0963344be1bcde7c6352c4ff92265d",
        FETCH_WAIT,
    ),
    Pin(
        "aiokafka.consumer.consumer",
        "AIOKafkaConsumer.start",
        "4b4c2a7c4187149794774964f6b72811fa4c6b1ff4b75e15cfaf8ceca46b8df4",
        "streams/repairs/fetch_wait.use_short_fetch_wait sets `_fetch_max_wait_ms` after the consumer is built; "
        "it only works because start() hands that attribute to the Fetcher. " + FETCH_WAIT,
    ),
    Pin(
        "aiokafka.consumer.fetcher",
        "Fetcher.fetched_records",
        "002f5b2f4ca34deeafdd2ceae80a37a5b13795cf33b770c2729c7302693a5490",
        "streams/repairs/recovery.py seeks never-committed inputs back to their start because this reads an empty "
        "partition set as every partition (a fetch between recovery and activation drops all it had "
        "buffered). Re-check whether the rewind is still needed (tests/e2e/test_unfinished_e2e.py).",
    ),
)


def installed_source(module_name: str, qualname: str) -> str:
    """The source of ``qualname`` (``Class.method``) in the installed module's file."""
    module_source = inspect.getsource(importlib.import_module(module_name))
    node: ast.AST = ast.parse(module_source)
    for name in qualname.split("."):
        body = getattr(node, "body", [])
        found = [
            child
            for child in body
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and child.name == name
        ]
        assert found, f"{module_name} no longer defines {qualname}"
        node = found[0]
    segment = ast.get_source_segment(module_source, node)
    assert segment is not None
    return segment


def test_faust_is_the_version_the_overrides_were_written_for() -> None:
    assert faust.__version__ == FAUST_VERSION, (
        f"faust-streaming is {faust.__version__}, pinned {FAUST_VERSION}: re-check each pinned method below "
        f"({', '.join(p.qualname for p in PINS if p.module.startswith('faust'))}), streams/repairs/recovery.py and "
        "streams/repairs/fetch_wait.py, then update FAUST_VERSION and the hashes."
    )


def test_aiokafka_is_the_version_the_fetch_wait_patch_was_written_for() -> None:
    assert aiokafka.__version__ == AIOKAFKA_VERSION, (
        f"aiokafka is {aiokafka.__version__}, pinned {AIOKAFKA_VERSION}: {FETCH_WAIT} Also re-check the "
        "empty-partition-set fetch that streams/repairs/recovery.rewind_uncommitted works around."
    )


@pytest.mark.parametrize("pin", PINS, ids=[f"{p.module}:{p.qualname}" for p in PINS])
def test_pinned_internal_is_unchanged(pin: Pin) -> None:
    digest = hashlib.sha256(installed_source(pin.module, pin.qualname).encode()).hexdigest()
    assert digest == pin.sha256, f"{pin.module}:{pin.qualname} changed (sha256 {digest}). Re-check: {pin.recheck}"


def test_the_pins_cover_every_override_in_the_recovery_repair() -> None:
    from faust.tables import TableManager
    from faust.tables.recovery import Recovery

    from engram.streams.repairs.recovery import ClearFirstRecovery, ClearFirstTables, FetchedEndsRecovery

    pinned = {p.qualname for p in PINS}
    pairs = ((ClearFirstRecovery, Recovery), (FetchedEndsRecovery, Recovery), (ClearFirstTables, TableManager))
    for override, base in pairs:
        overridden = {
            f"{base.__name__}.{name}"
            for name, member in vars(override).items()
            if name in vars(base) and (inspect.isfunction(member) or isinstance(member, property))
        }
        assert overridden <= pinned, f"{override.__name__} overrides unpinned Faust code: {overridden - pinned}"
