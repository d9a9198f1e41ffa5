"""Shared fixtures. The stand-ins start once per session through the same launcher as
``engram up`` and the demo (`infra.launcher.EmbeddedStack`), on free ports, under a temporary
root, and stop at the end of the session. A stand-in that cannot start FAILS the tests that
need it, with the launcher's reason and the server's log tail; nothing is skipped.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time
from collections.abc import Coroutine, Iterator
from contextvars import Context
from dataclasses import replace
from pathlib import Path
from typing import Any, Final, TypeVar

import neo4j
import pytest

from engram.infra.config import FULL_STACK, StackInfo
from engram.infra.errors import StandInError
from engram.infra.launcher import EmbeddedStack
from engram.streams.profile import STANDIN

T = TypeVar("T")


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackInfo]:
    """tansu broker + FalkorDB (with Bolt) + a Qdrant folder, for the whole session."""
    root = tmp_path_factory.mktemp("stack")
    launcher = EmbeddedStack(replace(FULL_STACK, root=root))
    try:
        info = launcher.start()
    except StandInError as exc:
        pytest.fail(f"the embedded stand-ins did not start: {exc}", pytrace=False)
    try:
        yield info
    finally:
        launcher.stop()


@pytest.fixture(scope="session")
def bolt_driver(stack: StackInfo) -> Iterator[neo4j.Driver]:
    """ONE neo4j driver on FalkorDB's Bolt port for the whole session.

    Reconnecting to that port hangs every other new connection (measured; see
    `infra.standins.STANDIN_NEO4J_DRIVER_SETTINGS`), so tests share this driver rather than
    opening their own. Smoke tests only: FalkorDB's Bolt crashes on requests over ~4 KB.
    """
    driver = neo4j.GraphDatabase.driver(stack.require_bolt_url(), auth=None, **STANDIN.neo4j_driver_settings())
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name unique to this test, usable as a topic, group, app id, graph or folder name.

    Lowercase letters, digits and '-': the test's name plus a short hash of its full node id
    (so equal test names in different modules, and parametrized cases, differ).
    """
    node_id: str = request.node.nodeid
    slug = re.sub(r"[^a-z0-9]+", "-", str(request.node.name).lower()).strip("-")[:40].strip("-")
    digest = hashlib.sha256(node_id.encode()).hexdigest()[:8]
    return f"{slug or 't'}-{digest}"


@pytest.fixture
def qdrant_folder(tmp_path: Path) -> Path:
    """A fresh folder for one in-process Qdrant engine (`qdrant-edge-py`).

    Each engine takes a single-process lock on its folder; nothing has to be started for it,
    so this needs no `stack`.
    """
    folder = tmp_path / "qdrant"
    folder.mkdir()
    return folder


# --- Hygiene: no test leaves threads or asyncio tasks behind (STYLE.md, "Real servers in tests").

LEAK_GRACE_S: Final = 2.0
"""Seconds a test's new threads (and its cancelled-but-unfinished tasks) get to finish before
they count as leaked: `server.shutdown()` and `Timer.cancel()` return before their thread has
exited. Only a test that leaks (or nearly leaks) pays this wait."""

ALLOWED_THREAD_NAMES: Final = frozenset(
    # tqdm (4.70) starts one monitor thread per process with its first bar and never joins it
    # when the bars close: a daemon singleton owned by the library, reaped at exit.
    {"tqdm_monitor"}
)
"""Threads that may outlive the test that first started them, by exact name.

No others need an exception: the session fixtures' threads start before any function-scoped
fixture, so they are in the snapshot; librdkafka's and qdrant-edge's worker threads are native
threads that `threading.enumerate()` never lists; pytest-timeout uses SIGALRM here (its
`thread` method's Timer starts before setup and is cancelled after teardown, so it is in the
snapshot too) and hypothesis starts no thread."""

ASYNCGEN_CLOSE: Final = "async_generator_athrow"
"""The type name of ``agen.aclose()``: the loop's async-generator finalizer runs it as a task
when a test drops an unfinished ``async for`` (as Faust's agents do on an error); it finishes
on the next loop iteration, like a cancelled task."""


def _describe_thread(thread: threading.Thread) -> str:
    return f"{thread.name!r} ({'daemon' if thread.daemon else 'non-daemon'})"


def _describe_task(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return f"{task.get_name()!r} running {getattr(coro, '__qualname__', repr(coro))}"


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not alive before, after up to `LEAK_GRACE_S` for each to exit."""
    deadline = time.monotonic() + LEAK_GRACE_S
    fresh = [t for t in threading.enumerate() if t not in before and t.name not in ALLOWED_THREAD_NAMES]
    for thread in fresh:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    return [t for t in fresh if t.is_alive()]


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _stopping(task: asyncio.Task[Any]) -> bool:
    return task.cancelling() > 0 or type(task.get_coro()).__name__ == ASYNCGEN_CLOSE


def _pending_tasks(loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[Any]]:
    """Tasks still pending on ``loop`` (which is not running). A task already cancelled, or one
    closing a dropped async generator, gets up to `LEAK_GRACE_S` to finish: both take effect on
    the next loop iteration."""
    stopping = {task for task in asyncio.all_tasks(loop) if _stopping(task)}
    if stopping:
        loop.run_until_complete(asyncio.wait(stopping, timeout=LEAK_GRACE_S))
    return sorted((task for task in asyncio.all_tasks(loop)), key=lambda task: task.get_name())


@pytest.fixture(autouse=True)
def no_leaked_threads_or_tasks() -> Iterator[None]:
    """Fail a test that leaves a thread (daemon or not) or an asyncio task behind.

    Threads: a snapshot of `threading.enumerate()` before, compared after. Pytest sets up wider
    scopes first and, within the function scope, autouse fixtures first, so this runs after the
    session and module fixtures' setup (their threads are in the snapshot) and its teardown runs
    after the test's own function fixtures have been torn down (what they close is closed).

    Tasks: this suite runs async code only through `asyncio.run` (no pytest-asyncio, no loop
    fixture), and since Python 3.11 `asyncio.run` is `asyncio.Runner`. So `Runner.run` is wrapped:
    when the main coroutine returns or raises, the tasks still pending on its loop are the ones
    the runner is about to cancel silently, i.e. the leaks. Wrapping the class covers
    `asyncio.run`, `from asyncio import run` and runners made inside threads; checking the loop
    after `run` (rather than wrapping the coroutine) leaves the main task untouched. A
    `Runner` that is deliberately reused across several `run` calls with tasks spanning them
    would be reported too; nothing here does that.

    A leak fails the test in its teardown, naming each thread and task.
    """
    leaked_tasks: list[str] = []
    real_run = asyncio.Runner.run

    def checked_run(runner: asyncio.Runner, coro: Coroutine[Any, Any, T], *, context: Context | None = None) -> T:
        if _loop_running():  # Runner.run refuses this; leave the running loop alone.
            return real_run(runner, coro, context=context)
        try:
            return real_run(runner, coro, context=context)
        finally:
            leaked_tasks.extend(_describe_task(task) for task in _pending_tasks(runner.get_loop()))

    before = set(threading.enumerate())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(asyncio.Runner, "run", checked_run)
        yield
    problems = [f"thread {_describe_thread(thread)}" for thread in _new_threads(before)]
    problems += [f"asyncio task {task}" for task in leaked_tasks]
    if problems:
        pytest.fail("the test left behind: " + "; ".join(problems), pytrace=False)
