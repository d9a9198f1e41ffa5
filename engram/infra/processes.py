"""Spawning stand-in servers and stopping exactly the processes that were spawned.

A process is identified by its pid AND its start time (``/proc/<pid>/stat`` field 22, in clock
ticks since boot) and executable, recorded when it was spawned. A pid that has since been reused
by another program never matches, so ``stop`` cannot kill it. The command line is not used for
identity: redis-server rewrites its own ``argv`` into a process title.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_PROC: Final = Path("/proc")
_POLL_S: Final = 0.05


@dataclass(frozen=True)
class ProcessIdentity:
    """Enough to recognise a spawned process later, from any other process."""

    pid: int
    executable: str
    start_ticks: int | None


def free_port(host: str) -> int:
    """A TCP port that is free on `host` now (the OS picks it; another process may still take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def free_port_in(host: str, low: int, high: int, attempts: int = 50) -> int:
    """A free TCP port in ``[low, high]``, for servers that cannot use the OS's ephemeral range."""
    for _ in range(attempts):
        port = low + secrets.randbelow(high - low + 1)
        if port_is_free(host, port):
            return port
    msg = f"no free TCP port in [{low}, {high}] on {host} after {attempts} tries"
    raise OSError(errno.EADDRINUSE, msg)


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def tcp_accepts(host: str, port: int, timeout_s: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def spawn(argv: Sequence[str], log_path: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start `argv` in its own session (so it outlives the caller), logging to `log_path`.

    Raises OSError when the binary cannot be executed.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        return subprocess.Popen(  # noqa: S603 -- argv is built by the launcher from resolved binary paths
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            close_fds=True,
        )


def identify(pid: int, executable: str) -> ProcessIdentity:
    return ProcessIdentity(pid=pid, executable=executable, start_ticks=_start_ticks(pid))


def is_running(identity: ProcessIdentity) -> bool:
    """True when the recorded process still runs (not exited, not a zombie, pid not reused)."""
    stat = _read_stat(identity.pid)
    if stat is None:
        # Without /proc (macOS) only the pid can be checked; with it, no stat means gone.
        return not _PROC.is_dir() and _signal_probe(identity.pid)
    state, ticks = stat
    if state in ("Z", "X"):
        return False
    if identity.start_ticks is not None and ticks != identity.start_ticks:
        return False
    return _executable_matches(identity)


def stop(
    identity: ProcessIdentity,
    grace_s: float,
    child: subprocess.Popen[bytes] | None = None,
    first_signal: signal.Signals = signal.SIGTERM,
) -> bool:
    """Send `first_signal` to the recorded process, then SIGKILL after `grace_s`.

    Returns True if it was running.

    `child` is the Popen handle when the caller spawned the process itself: it is reaped with
    ``wait`` so that no zombie or ResourceWarning is left behind.
    """
    if not is_running(identity):
        _reap(child)
        return False
    for sig, wait_s in ((first_signal, grace_s), (signal.SIGKILL, grace_s)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(identity.pid, sig)
        if _wait_gone(identity, wait_s, child):
            return True
    return True


def log_tail(log_path: Path, lines: int = 25) -> str:
    try:
        with open(log_path, "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - 16_384))
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _wait_gone(identity: ProcessIdentity, wait_s: float, child: subprocess.Popen[bytes] | None) -> bool:
    if child is not None:
        try:
            child.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not is_running(identity):
            return True
        time.sleep(_POLL_S)
    return not is_running(identity)


def _reap(child: subprocess.Popen[bytes] | None) -> None:
    if child is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=1.0)


def _read_stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may contain spaces: split after it.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])


def _start_ticks(pid: int) -> int | None:
    stat = _read_stat(pid)
    return None if stat is None else stat[1]


def _executable_matches(identity: ProcessIdentity) -> bool:
    try:
        exe = os.readlink(_PROC / str(identity.pid) / "exe")
    except OSError:
        # Not allowed to read it (another user's process): the start time already matched.
        return identity.start_ticks is not None
    return exe.removesuffix(" (deleted)") == os.path.realpath(identity.executable)


def _signal_probe(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
