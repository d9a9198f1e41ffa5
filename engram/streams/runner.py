"""Run pipeline workers as child processes (demo, benchmarks, end-to-end tests).

A worker is `python -m engram.streams.cli worker` with its config in ENGRAM_* variables; it is ready when
its web port serves /metrics. `stop` sends SIGTERM (Faust shuts down cleanly), then SIGKILL.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

from engram.streams.config import EngramConfig


class WorkerStartError(RuntimeError):
    """The worker exited or never served /metrics; the message holds its log tail."""


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when the process that started it dies, so a killed
    demo, bench or test run never leaves an orphaned worker behind (it runs in its own session)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def process_cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds(pid: int) -> float:
    """The CPU time of a process's children it has waited for (user + system), from /proc: a
    worker's forked snapshot writers (sinks/viewstate.py)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def anon_rss_bytes(pid: int) -> int:
    """A process's anonymous resident memory (``RssAnon`` in /proc/<pid>/status)."""
    found = re.search(r"^RssAnon:\s+(\d+) kB$", Path(f"/proc/{pid}/status").read_text(), re.M)
    return int(found.group(1)) * 1024 if found else 0


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU time so far (user + system) of a process's live threads, summed by thread name with its
    digits and dashes dropped (librdkafka's ``rdk:broker-1`` and ``rdk:broker2`` are ``rdk:broker``;
    Python's threads are all ``python``), from /proc. A thread that has ended is in no name's sum."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm, _, rest = task.joinpath("stat").read_text().partition(" (")[2].rpartition(")")
        except OSError:  # the thread ended while we looked
            continue
        fields = rest.split()
        name = comm.rstrip("0123456789-") or comm
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


@dataclass
class WorkerProcess:
    config: EngramConfig
    log_path: Path
    topic_prefix: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)
    _proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = None

    @property
    def cpu_seconds(self) -> float:
        """The worker process's CPU time so far (user + system, from /proc; 0 before it starts)."""
        return process_cpu_seconds(self._proc.pid) if self._proc is not None else 0.0

    @property
    def children_cpu_seconds(self) -> float:
        """`children_cpu_seconds` of the worker process (0 before it starts)."""
        return children_cpu_seconds(self._proc.pid) if self._proc is not None else 0.0

    @property
    def thread_cpu_seconds(self) -> dict[str, float]:
        """`thread_cpu_seconds` of the worker process (empty before it starts)."""
        return thread_cpu_seconds(self._proc.pid) if self._proc is not None else {}

    @property
    def rss_bytes(self) -> int:
        """The worker process's resident memory now (from /proc; 0 before it starts)."""
        if self._proc is None:
            return 0
        pages = int(Path(f"/proc/{self._proc.pid}/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")

    @property
    def anon_bytes(self) -> int:
        """The anonymous part of its resident memory (``RssAnon``: the heaps, not the files it maps,
        such as qdrant-edge's segments, whose pages the kernel can drop and read again)."""
        return anon_rss_bytes(self._proc.pid) if self._proc is not None else 0

    @property
    def metrics_url(self) -> str:
        return f"http://{self.config.web_host}:{self.config.web_port}/metrics"

    def start(self, ready_timeout_s: float = 60.0) -> WorkerProcess:
        env = {**os.environ, **self.config.to_env(self.topic_prefix), **self.extra_env}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("ab")
        self._proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
            [sys.executable, "-m", "engram.streams.cli", "worker", "--loglevel", "info"],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent,  # only async-signal-safe work: one prctl call
        )
        self._wait_ready(ready_timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                self.stop()
                msg = f"worker exited with {self._proc.returncode}:\n{log_tail(self.log_path)}"
                raise WorkerStartError(msg)
            if self.scrape() is not None:
                return
            time.sleep(0.2)
        self.stop()
        msg = f"worker did not serve {self.metrics_url} within {timeout_s:.0f}s:\n{log_tail(self.log_path)}"
        raise WorkerStartError(msg)

    def scrape(self) -> str | None:
        """The worker's /metrics text, or None when it does not answer."""
        return self.page("/metrics")

    def page(self, path: str) -> str | None:
        """The text of one of the worker's web pages (``/metrics``, ``/view``), or None when it
        does not answer."""
        url = f"http://{self.config.web_host}:{self.config.web_port}{path}"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - local http URL we built
                return str(response.read().decode("utf-8"))
        except OSError:
            return None

    def wait_exit(self, timeout_s: float) -> int | None:
        """The worker's exit code if it exits on its own within ``timeout_s``, else None."""
        if self._proc is None:
            return None
        try:
            return self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Crash the worker (SIGKILL): no shutdown, no final commit."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)
        self._close_log()

    def stop(self, grace_s: float = 15.0) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> WorkerProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def metric_value(exposition: str, name: str, labels: dict[str, str] | None = None) -> float:
    """Sum of a metric's samples in a Prometheus text exposition whose labels include ``labels``."""
    from prometheus_client.parser import text_string_to_metric_families

    total = 0.0
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in (labels or {}).items()):
                total += sample.value
    return total
