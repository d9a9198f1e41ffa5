"""The worker's sealing policy: which topics are sealed by whom, and the readers that open them."""

from __future__ import annotations

from pathlib import Path

from engram.schemas.record import Record
from engram.sinks.eventlog import EventLogSink, erase_subject
from engram.streams.config import EngramConfig, TopicNames
from engram.streams.sealing import eventlog_reader, eventlog_sealing, subject_policy


def test_records_are_sealed_by_their_key_but_code_and_relationships_stay_clear() -> None:
    names = TopicNames().prefixed("t1")
    subject_of = subject_policy(names)
    for topic in (names.turns, names.requests, names.compiled, names.memory, names.deadletter,
                  names.graph_requests, names.graph_answers):  # fmt: skip
        assert subject_of(topic, b"ada") == "ada"
    assert subject_of("engram.added.later", b"ada") == "ada"  # sealed unless said otherwise
    for topic in (names.code, names.relationships):
        assert subject_of(topic, b"ada") is None
    assert subject_of(names.turns, None) is None and subject_of(names.turns, b"") is None
    assert subject_of(names.turns, b"\xff\xfe") == b"\xff\xfe".decode("utf-8", "surrogateescape")


def test_the_config_switches_sealing_and_places_the_keys() -> None:
    config = EngramConfig.from_env({"ENGRAM_DATA_DIR": "/data"})
    assert (config.seal_eventlog, config.keys_dir) == (True, Path("/data/keys"))
    policy = eventlog_sealing(config)
    assert policy is not None and policy.keys.directory == Path("/data/keys")
    moved = EngramConfig.from_env({"ENGRAM_KEYSTORE_DIR": "/vault/keys", "ENGRAM_SEAL_EVENTLOG": "false"})
    assert (moved.seal_eventlog, moved.keys_dir) == (False, Path("/vault/keys"))
    assert eventlog_sealing(moved) is None
    assert EngramConfig.from_env(moved.to_env()) == moved


def test_a_workers_log_is_read_open_and_without_the_erased(tmp_path: Path) -> None:
    config = EngramConfig(data_dir=tmp_path)
    turns, code = config.topics.turns, config.topics.code
    with EventLogSink(config.eventlog_dir, sealing=eventlog_sealing(config)) as sink:
        for offset, user in enumerate(("ada", "bob", "ada")):
            sink.add(Record(turns, 0, offset, 0, user.encode(), f"{user} said hi".encode()))
        sink.add(Record(code, 0, 0, 0, b"repo", b"def f(): ..."))
        sink.flush()
    reader = eventlog_reader(config)
    assert [e["value"] for e in reader.read([turns, code])] == [b"ada said hi", b"bob said hi", b"ada said hi",
                                                                 b"def f(): ..."]  # fmt: skip
    assert reader.keys is not None and erase_subject(reader.keys, "ada")
    again = eventlog_reader(config)
    assert [e["value"] for e in again.read([turns])] == [b"bob said hi"] and again.erased == 2
