"""The table stores on disk (sinks/statestore.py): a partition's keys and the changelog offset they
reflect are written together, survive a reopen, and a deleted value leaves the files at `compact`."""

from __future__ import annotations

from pathlib import Path

from engram.sinks.statestore import PartitionStore


def test_keys_and_their_offset_are_written_together_and_survive_a_reopen(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "trace-state")
    assert store.offset(0) is None
    store.write(0, [(b'"alice"', b'{"turns": 1}'), (b'"bob"', b'{"turns": 2}')], offset=7)
    store.write(0, [(b'"bob"', None)], offset=8)
    store.write(3, [(b'"carol"', b"{}")], offset=0)
    store.close_all()

    reopened = PartitionStore(tmp_path / "trace-state")
    assert reopened.offset(0) == 8
    assert reopened.offset(3) == 0
    assert reopened.get(0, b'"alice"') == b'{"turns": 1}'
    assert reopened.get(0, b'"bob"') is None
    assert sorted(reopened.keys(0)) == [b'"alice"']  # the offset is not a key
    reopened.reset(0)
    assert reopened.offset(0) is None
    assert list(reopened.keys(0)) == []
    assert reopened.offset(3) == 0
    reopened.close_all()


def test_a_deleted_value_leaves_the_files_once_compacted(tmp_path: Path) -> None:
    folder = tmp_path / "dream-state"
    store = PartitionStore(folder)
    secret = b'{"text": "my passport number is 123-secret-456"}'
    store.write(1, [(b'"erased-user"', secret), (b'"kept-user"', b'{"text": "hello"}')], offset=1)
    store.compact(1)  # the value is in an SST file now, not only in the memtable
    assert _files_holding(folder, b"123-secret-456")

    store.write(1, [(b'"erased-user"', None)], offset=2)
    store.compact(1)

    assert _files_holding(folder, b"123-secret-456") == []
    assert store.get(1, b'"kept-user"') == b'{"text": "hello"}'
    store.close_all()


def _files_holding(folder: Path, needle: bytes) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]
