"""``KeyStore``: the subject keys that seal the event log, one small file each; erasing deletes one.

```
<keys>/<sha256(subject) hex>.key   the subject's key id (16 bytes) then key (32 bytes), mode 0600
<keys>/erased                      key ids (16 bytes each) of forgotten subjects, appended
```

Creating a key never overwrites one. The key is written to a temporary file, fsynced, then
hard-linked to its name, which fails if the name exists (the O_EXCL of a rename): of two processes
racing for a subject, the loser reads and uses the winner's key, so no record is ever sealed by a
key that is not the stored one. The folder is fsynced before the key is used: a key is durable
before any record it seals. A crash leaves at most a temporary file, which every lookup ignores.

``forget`` appends the key id to ``erased`` (fsynced), then unlinks the key file and fsyncs the
folder; a crash between the two leaves a key that every lookup treats as erased (and the next
``forget`` or lookup of that subject removes). In this process a forget takes effect at once;
another process sees it at its next ``refresh``, one ``stat`` of ``erased`` (the reader refreshes
per segment, the sink per batch). Unknown key ids (keys another process created) are found by
rescanning the folder, at most once per change of the folder.

Names: a file is named by a hash of its subject, and the log stores only random key ids, so once a
subject's file is gone nothing links its records to anyone (they stay linked to each other by
their common key id). Thread-safe: lookups read the caches without a lock; loading, creating and
forgetting hold one.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from engram.processors.trust.sealing import KEY_ID_BYTES, Entropy, MalformedSealError, SubjectKey
from engram.sinks.eventlog.layout import EventLogError, fsync_dir, sync_file

KEY_SUFFIX: Final = ".key"
ERASED_NAME: Final = "erased"
KEYS_BESIDE_LOG: Final = "keys"
_KEY_NAME_RE: Final = re.compile(r"^[0-9a-f]{64}\.key$")
_RACY_NS: Final = 2_000_000_000  # coarser than any file system's mtime resolution in use (ext3, HFS+: 1 s)


class KeyStoreError(EventLogError):
    """The key folder is missing, or a key file in it is unreadable or malformed."""


def key_file_name(subject: str) -> str:
    """``<sha256 hex>.key``; a subject that is not valid UTF-8 text (surrogate escapes) still maps."""
    return hashlib.sha256(subject.encode("utf-8", "surrogateescape")).hexdigest() + KEY_SUFFIX


class KeyStore:
    """Subject keys under ``directory``; ``setup`` creates it. ``fsync`` off only in tests."""

    def __init__(self, directory: Path | str, *, fsync: bool = True, entropy: Entropy = os.urandom) -> None:
        self.directory = Path(directory)
        self._fsync = fsync
        self._entropy = entropy
        self._lock = threading.Lock()
        self._by_subject: dict[str, SubjectKey] = {}
        self._by_name: dict[str, SubjectKey] = {}
        self._by_id: dict[bytes, SubjectKey] = {}
        self._erased: set[bytes] = set()
        self._erased_bytes = 0  # how much of ``erased`` has been read
        self._missing: set[bytes] = set()  # ids a scan did not find, until the folder changes
        self._scanned_mtime_ns: int | None = None

    def setup(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)

    # --- sealing: keys by subject -------------------------------------------------------------

    def subject_key(self, subject: str) -> SubjectKey:
        """The subject's key, created (durably) on first use."""
        return self.subject_keys([subject])[subject]

    def subject_keys(self, subjects: Iterable[str]) -> dict[str, SubjectKey]:
        """Keys of several subjects; those created are made durable with one folder fsync."""
        found: dict[str, SubjectKey] = {}
        missing: list[str] = []
        for subject in subjects:
            key = self._by_subject.get(subject)
            if key is None:
                missing.append(subject)
            else:
                found[subject] = key
        if missing:
            with self._lock:
                found.update(self._load_or_create(missing))
        return found

    def _load_or_create(self, subjects: list[str]) -> dict[str, SubjectKey]:
        self._require_folder()
        loaded: dict[str, SubjectKey] = {}
        created = False
        for subject in subjects:
            key = self._by_subject.get(subject)
            if key is None:
                name = key_file_name(subject)
                key = self._read_live(name)
                if key is None:
                    key, created = self._create(name), True
                self._remember(name, key, subject)
            loaded[subject] = key
        if created and self._fsync:
            fsync_dir(self.directory)
        return loaded

    def _create(self, name: str) -> SubjectKey:
        key = SubjectKey.generate(self._entropy)
        tmp = self.directory / f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, key.to_bytes())
            if self._fsync:
                sync_file(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, self.directory / name)
        except FileExistsError:
            # Another process created it first: its key is the subject's.
            raced = self._read_live(name)
            if raced is None:
                msg = f"key file {name} vanished while it was being created"
                raise KeyStoreError(msg) from None
            key = raced
        finally:
            tmp.unlink()
        return key

    # --- opening: keys by id ------------------------------------------------------------------

    def key_by_id(self, key_id: bytes) -> SubjectKey | None:
        """The key with this id, or None when it is erased (or was never in this folder)."""
        key = self._by_id.get(key_id)
        if key is not None or key_id in self._erased:
            return key
        with self._lock:
            self._refresh_locked()
            key = self._by_id.get(key_id)
            if key is None and key_id not in self._erased and key_id not in self._missing:
                self._scan_if_changed()
                key = self._by_id.get(key_id)
                if key is None and self._scanned_mtime_ns is not None:
                    self._missing.add(key_id)
            return key

    def refresh(self) -> None:
        """See forgets made by other processes since the last refresh (one ``stat``)."""
        with self._lock:
            self._refresh_locked()

    def _refresh_locked(self) -> None:
        path = self.directory / ERASED_NAME
        try:
            size = path.stat().st_size
        except FileNotFoundError:  # nothing forgotten yet (or no folder: lookups say so)
            return
        whole = size - size % KEY_ID_BYTES  # a torn last id is not read (forget truncates it)
        if whole <= self._erased_bytes:
            return
        with path.open("rb") as handle:
            handle.seek(self._erased_bytes)
            tail = handle.read(whole - self._erased_bytes)
        for start in range(0, len(tail) - len(tail) % KEY_ID_BYTES, KEY_ID_BYTES):
            self._drop(tail[start : start + KEY_ID_BYTES])
        self._erased_bytes += len(tail) - len(tail) % KEY_ID_BYTES

    def _scan_if_changed(self) -> None:
        """Load key files other processes created; forget files other processes removed."""
        mtime = self._require_folder()
        if mtime == self._scanned_mtime_ns:
            return
        started_ns = time.time_ns()
        self._missing.clear()
        names = {entry.name for entry in os.scandir(self.directory) if _KEY_NAME_RE.match(entry.name)}
        for name in set(self._by_name) - names:
            self._drop(self._by_name[name].key_id)
        for name in names - set(self._by_name):
            key = self._read_live(name)
            if key is not None:
                self._remember(name, key, None)
        # A file created in the same clock tick as the last change would not move the mtime, so a
        # change too recent to tell apart is not trusted (git's "racily clean" rule).
        self._scanned_mtime_ns = mtime if started_ns - mtime > _RACY_NS else None

    # --- erasure ------------------------------------------------------------------------------

    def forget(self, subject: str) -> bool:
        """Erase the subject's key, durably; True when there was one. Its records become
        unreadable for every reader of this key folder (see the module's docstring for when)."""
        with self._lock:
            self._require_folder()
            self._refresh_locked()
            name = key_file_name(subject)
            key = self._read_file(name)
            if key is None:
                return False
            self._append_erased(key.key_id)
            self._drop(key.key_id)
            self._unlink_key(name)
            return True

    def _append_erased(self, key_id: bytes) -> None:
        fd = os.open(self.directory / ERASED_NAME, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            size = os.fstat(fd).st_size
            if size % KEY_ID_BYTES:  # a crash tore the last id: cut it, or every later id is misread
                os.ftruncate(fd, size - size % KEY_ID_BYTES)
            os.write(fd, key_id)
            if self._fsync:
                sync_file(fd)
        finally:
            os.close(fd)
        if self._fsync:
            fsync_dir(self.directory)

    def _unlink_key(self, name: str) -> None:
        try:
            (self.directory / name).unlink()
        except FileNotFoundError:
            return
        if self._fsync:
            fsync_dir(self.directory)

    # --- caches and files ---------------------------------------------------------------------

    def _remember(self, name: str, key: SubjectKey, subject: str | None) -> None:
        self._by_name[name] = key
        self._by_id[key.key_id] = key
        if subject is not None:
            self._by_subject[subject] = key

    def _drop(self, key_id: bytes) -> None:
        self._erased.add(key_id)
        key = self._by_id.pop(key_id, None)
        if key is None:
            return
        for cache in (self._by_subject, self._by_name):
            for name in [k for k, v in cache.items() if v is key]:
                del cache[name]

    def _read_live(self, name: str) -> SubjectKey | None:
        """The key in file ``name``, or None if there is none or it is erased (then the file, left
        by a forget that crashed, is removed)."""
        self._refresh_locked()
        key = self._read_file(name)
        if key is not None and key.key_id in self._erased:
            self._unlink_key(name)
            return None
        return key

    def _read_file(self, name: str) -> SubjectKey | None:
        path = self.directory / name
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            msg = f"unreadable key file {path}: {exc}"
            raise KeyStoreError(msg) from exc
        try:
            return SubjectKey.from_bytes(raw)
        except MalformedSealError as exc:
            msg = f"malformed key file {path}: {exc}"
            raise KeyStoreError(msg) from exc

    def _require_folder(self) -> int:
        """The folder's mtime (ns); a missing folder is an error, never an empty store, so a
        mistyped path does not read as "every subject erased"."""
        try:
            return os.stat(self.directory).st_mtime_ns
        except FileNotFoundError as exc:
            msg = f"no key store at {self.directory}"
            raise KeyStoreError(msg) from exc


def reader_keys(log_root: Path, keys_dir: Path | None = None) -> KeyStore | None:
    """The key store to read the log at ``log_root`` with: ``keys_dir``, or else the ``keys`` folder
    beside the log (a worker's layout: ``<data dir>/eventlog`` and ``<data dir>/keys``), None when
    that does not exist (a reader then refuses sealed records rather than call them erased)."""
    if keys_dir is not None:
        return KeyStore(keys_dir)
    beside = log_root.parent / KEYS_BESIDE_LOG
    return KeyStore(beside) if beside.is_dir() else None


def erase_subject(store: KeyStore, subject: str) -> bool:
    """Crypto-shred a subject: delete its key, so that every record of it in the event log (and in
    any copy of the log) can no longer be opened, and a replay rebuilds the stores without them.
    True when the subject had a key. The entry point of ``engram forget``; the projections (vector
    and graph stores) are cleared by their own erasure."""
    return store.forget(subject)
