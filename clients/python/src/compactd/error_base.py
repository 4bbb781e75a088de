"""What every compactd error shares, and the errors that are the client's own (no answer, not
a pointer); compactd.errors, written from spec/shared.json, adds a class per error type of the
server's."""

from __future__ import annotations

from typing import Any, Mapping, cast

from .types import ErrorDetail

__all__ = ["CompactdError", "ErrorAnswer", "TransportError", "Timeout", "InvalidPointer", "retry_after_seconds",
           "answer_error"]


class CompactdError(Exception):
    """Any error answer from compactd, or a failure to reach it (status 0)."""

    def __init__(self, status: int, type: str, message: str, detail: ErrorDetail | None = None):
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        # Empty when no body carried one (a transport failure, a text that is no pointer).
        empty: dict[str, Any] = {}
        self.detail: ErrorDetail | dict[str, Any] = empty if detail is None else detail


class ErrorAnswer(CompactdError):
    """An error body compactd answered: its `type` and `message`, the rest in `detail`.
    `retry_after`, the answer's Retry-After, is there for a subclass to read."""

    detail: ErrorDetail

    def __init__(self, status: int, detail: ErrorDetail, retry_after: str | None = None):
        super().__init__(status, detail["type"], detail["message"], detail)


class TransportError(CompactdError):
    """No answer reached the client, or the answer was not compactd's JSON."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(status, "Transport", message)


class Timeout(TransportError):
    """No answer came within the client's `timeout` seconds (per attempt)."""


class InvalidPointer(CompactdError):
    """A text given as a pointer is not `[externalized <key> sha256:<hex>]`; nothing was sent."""

    def __init__(self, pointer: str):
        super().__init__(0, "InvalidPointer", "not a compactd pointer: %r" % pointer[:200])
        self.pointer = pointer


def retry_after_seconds(retry_after: str | None, fallback: float) -> float:
    """The seconds a Retry-After asks for: a number of seconds >= 0, else fallback."""
    try:
        seconds = float(retry_after) if retry_after is not None else fallback
    except ValueError:
        return fallback
    return seconds if seconds >= 0 else fallback


def answer_error(classes: Mapping[str, type[ErrorAnswer]], status: int, body: Any,
                 retry_after: str | None) -> CompactdError:
    """An error answer as the class `classes` gives its type, else a CompactdError."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict) or not isinstance(detail.get("type"), str) \
            or not isinstance(detail.get("message"), str):
        return TransportError("compactd answered %d without an error body" % status, status)
    cls = classes.get(detail["type"])
    answer = cast(ErrorDetail, detail)
    return CompactdError(status, answer["type"], answer["message"], answer) if cls is None \
        else cls(status, answer, retry_after)
