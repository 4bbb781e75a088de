"""Typed exceptions for compactd's error answers: one class per `error.type`."""

from __future__ import annotations

from typing import Any

__all__ = [
    "CompactdError", "InvalidRequest", "CompactionFailure", "Unauthorized", "Forbidden", "PayloadTooLarge", "NotFound",
    "Ambiguous", "StoreUnavailable", "Overloaded", "TransportError", "Timeout", "InvalidPointer",
    "error_from_response",
]


class CompactdError(Exception):
    """Any error answer from compactd, or a failure to reach it (status 0)."""

    def __init__(self, status: int, type: str, message: str, detail: dict[str, Any] | None = None):
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.detail = detail or {}


class ErrorAnswer(CompactdError):
    """An error body compactd answered: its `type` and `message`, the rest in `detail`."""

    def __init__(self, status: int, detail: dict[str, Any]):
        super().__init__(status, detail["type"], detail["message"], detail)


class InvalidRequest(ErrorAnswer):
    """400: the request is malformed; `path` is the JSON path of the first offending field."""

    def __init__(self, status: int, detail: dict[str, Any]):
        super().__init__(status, detail)
        self.path: str | None = detail.get("path")


class CompactionFailure(ErrorAnswer):
    """422: the protected units (or messages) cannot fit even as pointers.

    `required_budget` is the least budget that succeeds; `key` (units) or
    `index` (messages) names what forced it, and `forcing` holds the forcing
    messages themselves on the messages route, where `required_by` is the
    least plan (system, tools, reserve, markers, each message kept) adding
    up to `required_budget`, and `kinds` the same by kind, largest first,
    each a dict of `kind`, `tokens`, `percent` and `advice`.
    """

    def __init__(self, status: int, detail: dict[str, Any]):
        super().__init__(status, detail)
        self.budget: int = detail.get("budget", 0)
        self.required_budget: int = detail.get("required_budget", 0)
        self.key: str | None = detail.get("key")
        self.index: int | None = detail.get("index")
        self.tokens: int | None = detail.get("tokens")
        self.pointer_tokens: int | None = detail.get("pointer_tokens")
        self.required_by: dict[str, Any] | None = detail.get("required_by")
        self.kinds: list[dict[str, Any]] = (self.required_by or {}).get("kinds", [])
        self.forcing: list[Any] = []


class Unauthorized(ErrorAnswer):
    """401: API keys are configured and the request's key is missing or unknown."""


class Forbidden(ErrorAnswer):
    """403: the request's Origin (or, without API keys, its Host) is not allowed; nothing was read or written."""


class PayloadTooLarge(ErrorAnswer):
    """413: the body is over the server's limit (COMPACTD_MAX_BODY_BYTES); nothing was run."""


class NotFound(ErrorAnswer):
    """404: no such spill (version) or route."""


class Ambiguous(ErrorAnswer):
    """409: a sha256 prefix matches several versions; `candidates` are their digests."""

    def __init__(self, status: int, detail: dict[str, Any]):
        super().__init__(status, detail)
        self.candidates: list[str] = list(detail.get("candidates", []))


class StoreUnavailable(ErrorAnswer):
    """503 StoreUnavailable: Redis did not answer; nothing was acknowledged."""


class Overloaded(ErrorAnswer):
    """503 Overloaded: nothing was run; retry after `retry_after_seconds`."""

    def __init__(self, status: int, detail: dict[str, Any], retry_after: str | None):
        super().__init__(status, detail)
        try:
            seconds = float(retry_after) if retry_after is not None else 1.0
        except ValueError:
            seconds = 1.0
        self.retry_after_seconds: float = seconds if seconds >= 0 else 1.0


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


_BY_TYPE = {
    "InvalidRequest": InvalidRequest,
    "CompactionFailure": CompactionFailure,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "PayloadTooLarge": PayloadTooLarge,
    "NotFound": NotFound,
    "Ambiguous": Ambiguous,
    "StoreUnavailable": StoreUnavailable,
}


def error_from_response(status: int, body: Any, retry_after: str | None) -> CompactdError:
    """Maps an error answer to its typed exception."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict) or not isinstance(detail.get("type"), str) \
            or not isinstance(detail.get("message"), str):
        return TransportError("compactd answered %d without an error body" % status, status)
    if detail["type"] == "Overloaded":
        return Overloaded(status, detail, retry_after)
    cls = _BY_TYPE.get(detail["type"])
    if cls is None:
        return CompactdError(status, detail["type"], detail["message"], detail)
    return cls(status, detail)
