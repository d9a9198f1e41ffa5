"""Typed errors of the embedded stack launcher."""

from __future__ import annotations


class StandInError(Exception):
    """Base class of every launcher error."""


class StandInStartError(StandInError):
    """A stand-in server could not be started or never became ready.

    The message names the server, says what went wrong and ends with the tail of that server's
    log file, so a failing test or ``engram up`` shows the cause without another command.
    """

    def __init__(self, server: str, reason: str, log_tail: str = "") -> None:
        self.server = server
        self.reason = reason
        self.log_tail = log_tail
        msg = f"stand-in {server!r} failed to start: {reason}"
        if log_tail:
            msg = f"{msg}\n--- last lines of the {server} log ---\n{log_tail}"
        super().__init__(msg)


class StandInStateError(StandInError):
    """The state file is unreadable, or a stack is already running under the same root."""
