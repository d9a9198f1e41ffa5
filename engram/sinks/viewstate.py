"""The in-process view on disk: a restart loads it instead of replaying the whole memory log.

Issue 50, item 2. A worker's `MemoryView` and its `GraphEngine` are fed together on the compile
thread (streams/agents/compile.py). `ViewState` is both, with what they reflect: per partition of
engram.memory and of the replica topic, the last offset applied (`AppliedOffsets`: one notion of
position, the one the view already keeps), and how many memory events that is. A start loads the
newest snapshot and reads the event log from those offsets on (streams/app.py), so it replays what
came after the snapshot, not the whole history; without a snapshot it replays everything, as before.

**Writing** (`SnapshotWriter`), the way Redis's BGSAVE does: the compile thread forks between two
of its tasks, when the view and the graph are consistent with the offsets captured on the loop, and
the child pickles them as they were at the fork to a temporary file, fsyncs it, renames it to a
``.done`` file (both named by its pid) and exits; the parent goes on applying and compiling (the
pages the child reads are shared copy-on-write). When the parent reaps the child it moves the
``.done`` file into place (`os.replace`, atomic), so a kill at any moment leaves the previous
snapshot or the new one, never a torn one. Costs, stated: the fork copies the page tables
(milliseconds), the child's CPU is the pickling (`engram_view_snapshot_seconds`; `engram bench
ingest` reports it per turn), and the pages it touches are copied, up to the view's size again
while it runs.

**Erasure.** A snapshot holds users' texts in the clear, as Qdrant's payloads do. Applying an
erasure (`discard`) deletes the snapshot on disk and marks one in flight stale, so it is never
moved into place; the next snapshot is taken from the view without the user. A start that replays
an erasure from the log's tail discards the snapshot it loaded the same way.

**Reading.** A snapshot is written by one build of the code and read by the same one: its header
holds a fingerprint of the ``engram.processors`` sources whose classes it pickles
(`code_fingerprint`), and one written by other code, or one that cannot be read, is logged and
ignored (the view is then rebuilt from the whole log). The embedder and the token counter are not
part of it: the loader attaches the worker's own (`MemoryView.attach`, `GraphEngine.attach`).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Final

import engram.processors
from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.view import MemoryView

logger = logging.getLogger(__name__)

FORMAT: Final = 1
FILE: Final = "view.snapshot"
# A snapshot is due once the events applied since the last one reach this share of the events it
# covered (or the configured minimum): the log's tail replayed at a start stays a bounded share of
# the history, and the pickling's CPU per event applied stays constant as the view grows. A
# configured ``max_tail`` caps that share: past it, a start's replay stays bounded in events (so in
# time) whatever the history, and the pickling's CPU per event grows with the view instead.
GROWTH: Final = 0.25


@dataclass
class ViewState:
    """The view and the graph as of ``memory``/``shared`` (partition -> last offset applied of
    engram.memory / of the replica topic), ``events`` memory events in all."""

    view: MemoryView
    graph: GraphEngine | None
    memory: dict[int, int]
    shared: dict[int, int]
    events: int


@cache
def code_fingerprint() -> str:
    """SHA-256 of the ``engram.processors`` sources (paths and bytes, in path order)."""
    root = Path(next(iter(engram.processors.__path__)))
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def load_snapshot(folder: Path) -> ViewState | None:
    """The snapshot in ``folder``, or None (none, another build's, or unreadable: logged). Leftovers
    of a write the worker did not finish are removed."""
    remove_leftovers(folder)
    path = folder / FILE
    if not path.exists():
        return None
    enabled = gc.isenabled()
    gc.disable()  # millions of new objects, none of them garbage: a collection pass would find nothing
    try:
        with path.open("rb") as handle:
            header = pickle.load(handle)  # noqa: S301 - our own file, written by this worker's code
            if header != (FORMAT, code_fingerprint()):
                logger.info("view snapshot %s was written by other code: rebuilding from the log", path)
                return None
            state = pickle.load(handle)  # noqa: S301 - as above
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError) as exc:
        logger.warning("view snapshot %s cannot be read (%s): rebuilding from the log", path, exc)
        return None
    finally:
        if enabled:
            gc.enable()
    if not isinstance(state, ViewState):
        logger.warning("view snapshot %s holds no view: rebuilding from the log", path)
        return None
    return state


def _done(folder: Path, pid: int) -> Path:
    """Where the writer ``pid`` leaves a finished snapshot (per writer: a writer orphaned by a
    killed worker never writes over a later worker's)."""
    return folder / f"{FILE}.{pid}.done"


def remove_leftovers(folder: Path) -> None:
    """Files of writes never moved into place (a killed worker's, a stale one's)."""
    for leftover in [*folder.glob(f"{FILE}.*.tmp"), *folder.glob(f"{FILE}.*.done")]:
        leftover.unlink(missing_ok=True)


def write_snapshot(folder: Path, state: ViewState) -> Path:
    """``state`` to this process's ``.done`` file in ``folder``, durably (written whole, then renamed)."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp, done = folder / f"{FILE}.{os.getpid()}.tmp", _done(folder, os.getpid())
    with tmp.open("wb") as handle:
        pickle.dump((FORMAT, code_fingerprint()), handle, protocol=pickle.HIGHEST_PROTOCOL)
        pickle.dump(state, handle, protocol=pickle.HIGHEST_PROTOCOL)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, done)
    return done


def _install(done: Path) -> None:
    """The ``done`` file becomes the snapshot (atomic, and durable once the folder is synced)."""
    folder = done.parent
    os.replace(done, folder / FILE)
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@dataclass
class _Child:
    pid: int
    generation: int
    started: float
    events: int


@dataclass
class SnapshotWriter:
    """Writes `ViewState`s to ``folder`` in forked children, one at a time (see the module
    docstring). ``min_events``: the fewest memory events applied between two snapshots;
    ``max_tail`` (0: none): the most, once the growth rule would ask for more.
    ``on_written(seconds, bytes)`` is called for each snapshot moved into place. Every method runs
    on the thread that changes the view (the compile thread), except `due`, which reads counts."""

    folder: Path
    min_events: int
    max_tail: int = 0
    on_written: Callable[[float, int], None] = lambda _s, _b: None
    covered: int = 0  # memory events the newest snapshot (written or loaded) covers
    _generation: int = 0  # raised by every erasure: a child forked before one is stale
    _child: _Child | None = field(default=None, repr=False)

    def due(self, events: int) -> bool:
        """Whether a snapshot of a view that has applied ``events`` memory events is due."""
        due_at = max(self.min_events, GROWTH * self.covered)
        if self.max_tail:
            due_at = min(due_at, max(self.min_events, self.max_tail))
        return self._child is None and events - self.covered >= due_at

    def start(self, state: ViewState) -> bool:
        """Fork a child that writes ``state``; False when one is still writing."""
        self.reap()
        if self._child is not None:
            return False
        self.folder.mkdir(parents=True, exist_ok=True)
        pid = os.fork()
        if pid == 0:  # the child: write and leave, whatever happens (never return into the parent's code)
            code = 1
            try:
                gc.disable()
                write_snapshot(self.folder, state)
                code = 0
            finally:
                os._exit(code)
        self._child = _Child(pid, self._generation, time.monotonic(), state.events)
        return True

    def reap(self, *, wait: bool = False) -> None:
        """Finish a child that has exited (or wait for it): its snapshot moves into place unless it
        failed or an erasure made it stale."""
        child = self._child
        if child is None:
            return
        try:
            pid, status = os.waitpid(child.pid, 0 if wait else os.WNOHANG)
        except ChildProcessError:  # reaped by someone else: the .done file says whether it finished
            pid, status = child.pid, 0
        if pid == 0:
            return
        self._child = None
        done = _done(self.folder, child.pid)
        if os.waitstatus_to_exitcode(status) != 0 or child.generation != self._generation or not done.exists():
            remove_leftovers(self.folder)
            logger.warning("view snapshot of %d events was not kept (exit status %d)", child.events, status)
            return
        size = done.stat().st_size
        _install(done)
        remove_leftovers(self.folder)
        self.covered = child.events
        self.on_written(time.monotonic() - child.started, size)

    def discard(self) -> None:
        """An erasure was applied: the snapshot on disk goes, and one in flight will not be kept."""
        self._generation += 1
        (self.folder / FILE).unlink(missing_ok=True)
        self.covered = 0
