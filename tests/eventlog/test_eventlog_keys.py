"""The key store: created once and durably, found by subject and by id, forgotten for everyone."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from engram.processors.trust.sealing import KEY_ID_BYTES, SubjectKey
from engram.sinks.eventlog import KeyStore, KeyStoreError, erase_subject, reader_keys
from engram.sinks.eventlog.keys import ERASED_NAME, key_file_name


def store(root: Path) -> KeyStore:
    keys = KeyStore(root / "keys")
    keys.setup()
    return keys


def test_a_key_is_made_on_first_use_and_read_back_by_another_process(tmp_path: Path) -> None:
    first = store(tmp_path)
    ada = first.subject_key("ada")
    assert first.subject_key("ada") is ada  # cached
    files = sorted(p.name for p in (tmp_path / "keys").iterdir())
    assert files == [key_file_name("ada")]  # named by a hash: no subject in the clear
    assert "ada" not in files[0]
    assert oct((tmp_path / "keys" / files[0]).stat().st_mode & 0o777) == "0o600"
    other = KeyStore(tmp_path / "keys")
    assert other.subject_key("ada").to_bytes() == ada.to_bytes()
    found = other.key_by_id(ada.key_id)
    assert found is not None and found.key == ada.key


def test_a_half_written_key_is_ignored(tmp_path: Path) -> None:
    keys = store(tmp_path)
    # A crash while creating: the temporary file holds part of a key, the name was never linked.
    name = key_file_name("ada")
    (tmp_path / "keys" / f".{name}.0123456789abcdef.tmp").write_bytes(b"\x01" * 20)
    ada = keys.subject_key("ada")
    assert len(ada.to_bytes()) == 48
    assert KeyStore(tmp_path / "keys").key_by_id(b"\x01" * KEY_ID_BYTES) is None
    assert KeyStore(tmp_path / "keys").subject_key("ada").key == ada.key


def test_a_malformed_key_file_is_an_error_not_a_new_key(tmp_path: Path) -> None:
    keys = store(tmp_path)
    (tmp_path / "keys" / key_file_name("ada")).write_bytes(b"short")
    with pytest.raises(KeyStoreError, match="malformed key file"):
        keys.subject_key("ada")


def test_two_processes_racing_for_a_subject_share_one_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    winner, loser = store(tmp_path), KeyStore(tmp_path / "keys")
    real_link = os.link

    def link_after_the_winner(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        monkeypatch.setattr(os, "link", real_link)
        winner.subject_key("ada")  # the other process links its key first
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link_after_the_winner)
    raced = loser.subject_key("ada")
    assert raced.key == winner.subject_key("ada").key
    assert [p.name for p in (tmp_path / "keys").iterdir() if p.name.endswith(".tmp")] == []


def test_threads_asking_for_the_same_subjects_get_the_same_keys(tmp_path: Path) -> None:
    keys = store(tmp_path)
    seen: list[dict[str, SubjectKey]] = []
    threads = [threading.Thread(target=lambda: seen.append(keys.subject_keys(["a", "b", "c"]))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {tuple(found[s].key for s in "abc") for found in seen} == {tuple(keys.subject_key(s).key for s in "abc")}
    assert len(list((tmp_path / "keys").glob("*.key"))) == 3


def test_forget_takes_effect_here_at_once_and_elsewhere_at_refresh(tmp_path: Path) -> None:
    writer, reader = store(tmp_path), KeyStore(tmp_path / "keys")
    ada, bob = writer.subject_key("ada"), writer.subject_key("bob")
    assert reader.key_by_id(ada.key_id) is not None  # cached by the other process
    assert erase_subject(writer, "ada") is True
    assert writer.key_by_id(ada.key_id) is None
    reader.refresh()
    assert reader.key_by_id(ada.key_id) is None
    assert reader.key_by_id(bob.key_id) is not None
    assert not (tmp_path / "keys" / key_file_name("ada")).exists()
    assert erase_subject(writer, "ada") is False  # nothing left to erase
    # The subject may come back: it gets a new key, unrelated to the erased one.
    again = reader.subject_key("ada")
    assert again.key_id != ada.key_id and writer.key_by_id(again.key_id) is not None


def test_a_forget_cut_short_by_a_crash_still_erases(tmp_path: Path) -> None:
    keys = store(tmp_path)
    ada = keys.subject_key("ada")
    # The id reached ``erased`` but the process died before unlinking the key file.
    (tmp_path / "keys" / ERASED_NAME).write_bytes(ada.key_id + b"\x07" * 5)  # and a torn next id
    fresh = KeyStore(tmp_path / "keys")
    assert fresh.key_by_id(ada.key_id) is None
    assert fresh.subject_key("ada").key_id != ada.key_id  # the old file is removed, a new key made
    bob = fresh.subject_key("bob")
    assert fresh.forget("bob")
    assert (tmp_path / "keys" / ERASED_NAME).stat().st_size == 2 * KEY_ID_BYTES  # the torn id was cut
    assert KeyStore(tmp_path / "keys").key_by_id(bob.key_id) is None


def test_a_missing_folder_is_an_error_not_an_empty_store(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "nowhere")
    with pytest.raises(KeyStoreError, match="no key store"):
        keys.key_by_id(b"\x00" * KEY_ID_BYTES)
    with pytest.raises(KeyStoreError, match="no key store"):
        keys.subject_key("ada")


def test_readers_find_the_keys_beside_the_log(tmp_path: Path) -> None:
    assert reader_keys(tmp_path / "eventlog") is None
    store(tmp_path)
    found = reader_keys(tmp_path / "eventlog")
    assert found is not None and found.directory == tmp_path / "keys"
    named = reader_keys(tmp_path / "eventlog", tmp_path / "elsewhere")
    assert named is not None and named.directory == tmp_path / "elsewhere"
