"""The leak guard in ``tests/conftest.py`` can fail: a test that leaves a thread or an asyncio task
behind is reported, by name, and a test that cleans up after itself is not.

The inner tests run in a subprocess so that their leaks cannot leak into this test."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]

INNER_CONFTEST = '''
import threading

import tests.conftest
from tests.conftest import no_leaked_threads_or_tasks  # noqa: F401 - the guard under test

tests.conftest.LEAK_GRACE_S = 0.2  # a leaking test waits out the grace; keep this run short

RELEASE = threading.Event()
"""Set when the inner session ends, so that the leaked non-daemon thread lets the process exit."""


def pytest_sessionfinish():
    RELEASE.set()
'''

INNER_TESTS = """
import asyncio
import threading

from conftest import RELEASE


def test_leaks_a_daemon_thread():
    threading.Thread(target=RELEASE.wait, name="leaky-daemon", daemon=True).start()


def test_leaks_a_non_daemon_thread():
    threading.Thread(target=RELEASE.wait, name="leaky-worker").start()


def test_leaks_a_task():
    async def forever():
        await asyncio.Event().wait()

    async def main():
        asyncio.create_task(forever(), name="leaky-task")
        await asyncio.sleep(0)

    asyncio.run(main())


def test_joins_its_thread_and_cancels_its_task():
    thread = threading.Thread(target=RELEASE.wait, args=(0.01,), name="tidy-thread")
    thread.start()
    thread.join()

    async def main():
        task = asyncio.create_task(asyncio.Event().wait(), name="tidy-task")
        await asyncio.sleep(0)
        task.cancel()  # not awaited: the guard lets a cancelled task finish

    asyncio.run(main())


def test_drops_an_async_generator_on_an_error():
    async def numbers():
        yield 1
        yield 2

    async def main():
        async for _ in numbers():
            raise KeyError("stop")  # the loop closes the dropped generator in a task of its own

    try:
        asyncio.run(main())
    except KeyError:
        pass
"""


def test_leaked_threads_and_tasks_fail_their_test(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeconftest(INNER_CONFTEST)
    pytester.makepyfile(test_inner=INNER_TESTS)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")

    result.assert_outcomes(passed=5, errors=3)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaks_a_daemon_thread*",
            "the test left behind: thread 'leaky-daemon' (daemon)",
            "*ERROR at teardown of test_leaks_a_non_daemon_thread*",
            "the test left behind: thread 'leaky-worker' (non-daemon)",
            "*ERROR at teardown of test_leaks_a_task*",
            "the test left behind: asyncio task 'leaky-task' running test_leaks_a_task.<locals>.forever",
        ]
    )
    assert "tidy" not in result.stdout.str()
