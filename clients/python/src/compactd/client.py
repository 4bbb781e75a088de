"""The compactd HTTP client: one method per REST operation over urllib."""

from __future__ import annotations

import json
import random
import socket
import time
import uuid
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NamedTuple, cast

from .definitions import (KEY_MAX_BYTES, KEY_UNRESERVED_PUNCTUATION, POINTER_PATTERN, POINTER_TRIMMED, Format)
from .errors import (CompactdError, CompactionFailure, InvalidPointer, Overloaded, StoreUnavailable, Timeout,
                     TransportError, error_from_response)
from .types import (CompactResult, MessagesCompactResult, MessagesVerifyResult, SessionTools, Spill, SpillList,
                    TokensResult, VerifyResult)

__all__ = ["Compactd", "encode_key", "parse_pointer", "Format"]

_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                  + KEY_UNRESERVED_PUNCTUATION.encode("ascii"))


def encode_key(key: str) -> str:
    """Percent-encodes every UTF-8 byte outside A-Z a-z 0-9 and KEY_UNRESERVED_PUNCTUATION, as
    compactd's hrefs do."""
    return "".join(chr(b) if b in _KEPT else "%%%02X" % b for b in key.encode("utf-8"))


def parse_pointer(pointer: str) -> tuple[str, str] | None:
    """The (key, sha256 prefix) of `[externalized <key> sha256:<hex>]` as compactd reads it
    (POINTER_PATTERN, with POINTER_TRIMMED characters around it ignored), or None."""
    m = POINTER_PATTERN.fullmatch(pointer.strip(POINTER_TRIMMED))
    if not m:
        return None
    # Each escaped byte is written %XX; nothing else is.
    key = urllib.parse.unquote(m.group(1))
    if len(key.encode("utf-8")) > KEY_MAX_BYTES:
        return None
    return key, m.group(2)


class _Call(NamedTuple):
    """One operation's request, as `request` takes it."""
    method: str
    path: str
    body: Any = None
    raw_body: str | None = None
    headers: dict[str, str] | None = None


def _lift_system(messages: list[dict[str, Any]], system: Any) -> tuple[list[dict[str, Any]], list[int], Any]:
    """Anthropic has no system role: its messages' contents join the top-level
    `system` (after the one given), in order. Answers the other messages, the
    index in `messages` of each, and the system to send."""
    parts: list[Any] = [] if system is None else [system]
    parts += [m.get("content") for m in messages if m.get("role") == "system"]
    kept = [i for i, m in enumerate(messages) if m.get("role") != "system"]
    if all(isinstance(p, str) for p in parts):
        lifted: Any = "\n\n".join(parts)
    else:
        lifted = [b for p in parts for b in ([{"type": "text", "text": p}] if isinstance(p, str) else p)]
    return [messages[i] for i in kept], kept, lifted


def _forcing(e: CompactionFailure, messages: list[dict[str, Any]], kept: list[int]) -> None:
    """A CompactionFailure names the message it was sent as; point it at the caller's."""
    if e.index is not None and 0 <= e.index < len(kept):
        e.index = kept[e.index]
        e.forcing = [messages[e.index]]


class _Operations:
    """What Compactd and AsyncCompactd (compactd.aio) share: the settings, each operation's
    request (a _Call), the retry rule and how an answer is read. Each sends the requests
    its own way and types its operations' answers (compactd.types)."""

    base_url: str
    api_key: str | None
    timeout: float
    max_retries: int
    backoff: float
    max_backoff: float
    headers: dict[str, str]

    def _configure(self, base_url: str, api_key: str | None, timeout: float, headers: dict[str, str] | None,
                   max_retries: int, backoff: float, max_backoff: float) -> None:
        if max_retries < 0 or backoff < 0 or max_backoff < 0 or timeout <= 0:
            raise ValueError("max_retries, backoff and max_backoff must be >= 0 and timeout > 0")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.headers = dict(headers or {})

    def _request_headers(self, extra: dict[str, str]) -> dict[str, str]:
        headers = {"Accept": "application/json", **self.headers, **extra}
        if self.api_key is not None:
            headers["Authorization"] = "Bearer " + self.api_key
        return headers

    @staticmethod
    def _payload(body: Any, raw_body: str | None, headers: dict[str, str]) -> bytes | None:
        if body is None and raw_body is None:
            return None
        headers["Content-Type"] = "application/json"
        text = raw_body if raw_body is not None else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8")

    def _safe(self, method: str, extra: dict[str, str]) -> bool:
        """Whether a resend is safe: reads, deletes, and requests that carry an Idempotency-Key."""
        return method in ("GET", "HEAD", "DELETE") or any(k.lower() == "idempotency-key" for k in extra) \
            or any(k.lower() == "idempotency-key" for k in self.headers)

    def _retry_delay(self, e: CompactdError, attempt: int, safe: bool) -> float | None:
        """Seconds to wait before retrying after e, or None when it is not retried."""
        retriable = isinstance(e, Overloaded) or (safe and (
            isinstance(e, StoreUnavailable) or (isinstance(e, TransportError) and e.status == 0)))
        if not retriable or attempt >= self.max_retries:
            return None
        delay = min(self.max_backoff, self.backoff * 2.0 ** attempt) * random.uniform(0.5, 1.0)
        return max(delay, e.retry_after_seconds) if isinstance(e, Overloaded) else delay

    @staticmethod
    def _answer(method: str, path: str, status: int, raw: bytes, retry_after: str | None) -> Any:
        """The parsed body of an answer, or its typed error raised."""
        parsed = None
        if raw:
            try:
                parsed = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise TransportError("%s %s: %d with a body that is not JSON" % (method, path, status), status) from e
        if status >= 400:
            raise error_from_response(status, parsed, retry_after)
        return parsed

    def _session(self, session: str) -> str:
        return "/v1/sessions/" + encode_key(session)

    # ---- The operations' requests (Compactd and AsyncCompactd send them) ----

    def _compact_units(self, session: str, units: list[dict[str, Any]], budget: int, idempotency_key: str | None,
                       options: dict[str, Any]) -> _Call:
        return _Call("POST", self._session(session) + "/compact", {**options, "budget": budget, "units": units},
                     headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())})

    def _messages_request(self, session: str, messages: list[dict[str, Any]], budget: int, format: Format,
                          idempotency_key: str | None, options: dict[str, Any]) -> tuple[_Call, list[int]]:
        """A messages compaction's request, and the index in `messages` of each message sent.
        Anthropic has no system role: for it, `role: "system"` messages are moved into
        `system` (after any given), in order, their text as sent."""
        sent, kept = messages, list(range(len(messages)))
        if format == "anthropic" and any(isinstance(m, dict) and m.get("role") == "system" for m in messages):
            sent, kept, options["system"] = _lift_system(messages, options.get("system"))
        body = {**options, "format": format, "budget": budget, "messages": sent}
        return _Call("POST", self._session(session) + "/messages/compact", body,
                     headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())}), kept

    def _verify(self, session: str, context: str, units: list[dict[str, Any]], options: dict[str, Any]) -> _Call:
        return _Call("POST", self._session(session) + "/verify", {**options, "context": context, "units": units})

    def _verify_messages(self, session: str, messages: list[dict[str, Any]], units: list[dict[str, Any]],
                         format: Format, options: dict[str, Any]) -> _Call:
        body = {**options, "format": format, "messages": messages, "units": units}
        return _Call("POST", self._session(session) + "/messages/verify", body)

    @staticmethod
    def _count_tokens(texts: list[str], tokenizer: str | None) -> _Call:
        body: dict[str, Any] = {"texts": texts}
        if tokenizer is not None:
            body["tokenizer"] = tokenizer
        return _Call("POST", "/v1/tokens", body)

    def _get_spill(self, session: str, key: str, sha256: str | None) -> _Call:
        q = "" if sha256 is None else "?sha256=" + urllib.parse.quote(sha256, safe="")
        return _Call("GET", self._session(session) + "/spills/" + encode_key(key) + q)

    def _reacquire(self, session: str, pointer: str) -> _Call:
        if parse_pointer(pointer) is None:
            raise InvalidPointer(pointer)
        return self._reacquire_call(session, {"pointer": pointer})

    def _reacquire_call(self, session: str, arguments: Any) -> _Call:
        path = self._session(session) + "/reacquire"
        if isinstance(arguments, str):
            return _Call("POST", path, raw_body=arguments)
        return _Call("POST", path, {} if arguments is None else arguments)

    def _tools(self, session: str, format: Format) -> _Call:
        return _Call("GET", self._session(session) + "/tools?format=" + urllib.parse.quote(format, safe=""))

    def _list_spills(self, session: str) -> _Call:
        return _Call("GET", self._session(session) + "/spills")

    def _delete_session(self, session: str) -> _Call:
        return _Call("DELETE", self._session(session))


class Compactd(_Operations):
    """A compactd server at `base_url`; `api_key` is sent as a Bearer token.

    `opener` replaces urllib's (a urllib.request.OpenerDirector), so a caller
    can route requests through its own handlers; `headers` go on every request.
    `timeout` bounds each attempt in seconds (Timeout when it passes).

    A 503 Overloaded (nothing was run) is retried after its Retry-After; a 503
    StoreUnavailable, a failed connection or a timeout only where a resend is
    safe: reads and deletes, and compactions, which carry an Idempotency-Key
    (one per call, the same on each of its attempts). 4xx is never retried.
    Up to `max_retries` retries (0 turns them off), waiting `backoff` seconds
    doubled per attempt, at most `max_backoff`, with random jitter.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", api_key: str | None = None,
                 timeout: float = 60.0, opener: urllib.request.OpenerDirector | None = None,
                 headers: dict[str, str] | None = None, max_retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 8.0):
        self._configure(base_url, api_key, timeout, headers, max_retries, backoff, max_backoff)
        self._opener = opener or urllib.request.build_opener()

    # ---- Transport ----

    def request(self, method: str, path: str, body: Any = None, raw_body: str | None = None,
                headers: dict[str, str] | None = None) -> Any:
        """Sends a request, retried as the class says; returns the parsed body (None when
        empty) or raises the typed error. `raw_body`, when given, is sent as it is instead
        of `body` written as JSON; `headers` are added to this request's."""
        extra = dict(headers or {})
        safe = self._safe(method, extra)
        attempt = 0
        while True:
            try:
                return self._send(method, path, body, raw_body, extra)
            except CompactdError as e:
                delay = self._retry_delay(e, attempt, safe)
                if delay is None:
                    raise
                attempt += 1
                time.sleep(delay)

    def _send(self, method: str, path: str, body: Any, raw_body: str | None, extra: dict[str, str]) -> Any:
        """One attempt of a request."""
        headers = self._request_headers(extra)
        data = self._payload(body, raw_body, headers)
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                status, raw, retry_after = resp.status, resp.read(), resp.headers.get("Retry-After")
        except urllib.error.HTTPError as e:
            status, raw, retry_after = e.code, e.read(), e.headers.get("Retry-After")
        except (TimeoutError, socket.timeout) as e:
            raise Timeout("%s %s: no answer within %gs" % (method, path, self.timeout)) from e
        except (urllib.error.URLError, OSError) as e:
            if isinstance(getattr(e, "reason", None), (TimeoutError, socket.timeout)):
                raise Timeout("%s %s: no answer within %gs" % (method, path, self.timeout)) from e
            raise TransportError("%s %s: %s" % (method, path, getattr(e, "reason", e))) from e
        return self._answer(method, path, status, raw, retry_after)

    # ---- Operations ----

    def compact_units(self, session: str, units: list[dict[str, Any]], budget: int,
                      idempotency_key: str | None = None, **options: Any) -> CompactResult:
        """POST /v1/sessions/{session}/compact: plan a context of units under `budget`.
        `idempotency_key` (a new UUID when None) is sent on every attempt of this call."""
        call = self._compact_units(session, units, budget, idempotency_key, options)
        return cast(CompactResult, self.request(*call))

    def compact_messages(self, session: str, messages: list[dict[str, Any]], budget: int,
                         format: Format = "openai", idempotency_key: str | None = None,
                         **options: Any) -> MessagesCompactResult:
        """POST /v1/sessions/{session}/messages/compact: the whole answer; send its `messages`
        (and, for Anthropic, `system`; for the Responses API, as `input`, with `instructions`)
        to the model. A CompactionFailure carries the forcing message in `forcing`.
        Anthropic has no system role: for it, `role: "system"` messages are moved into
        `system` (after any given), in order, their text as sent."""
        call, kept = self._messages_request(session, messages, budget, format, idempotency_key, options)
        try:
            return cast(MessagesCompactResult, self.request(*call))
        except CompactionFailure as e:
            _forcing(e, messages, kept)
            raise

    def verify(self, session: str, context: str, units: list[dict[str, Any]], **options: Any) -> VerifyResult:
        """POST /v1/sessions/{session}/verify: audit a context string for silent truncation."""
        return cast(VerifyResult, self.request(*self._verify(session, context, units, options)))

    def verify_messages(self, session: str, messages: list[dict[str, Any]], units: list[dict[str, Any]],
                        format: Format = "openai", **options: Any) -> MessagesVerifyResult:
        """POST /v1/sessions/{session}/messages/verify: the audit over a chat history."""
        call = self._verify_messages(session, messages, units, format, options)
        return cast(MessagesVerifyResult, self.request(*call))

    def count_tokens(self, texts: list[str], tokenizer: str | None = None) -> TokensResult:
        """POST /v1/tokens: token counts under `tokenizer` (the server's default when None)."""
        return cast(TokensResult, self.request(*self._count_tokens(texts, tokenizer)))

    def get_spill(self, session: str, key: str, sha256: str | None = None) -> Spill:
        """GET one spill by key and sha256 prefix (16-64 hex; without it, the version spilled last)."""
        return cast(Spill, self.request(*self._get_spill(session, key, sha256)))

    def reacquire(self, session: str, pointer: str) -> Spill:
        """The spill a pointer text names, read through POST .../reacquire (logged as a
        re-acquisition); InvalidPointer for a text that is no pointer."""
        return cast(Spill, self.request(*self._reacquire(session, pointer)))

    def reacquire_call(self, session: str, arguments: Any) -> Spill:
        """POST /v1/sessions/{session}/reacquire: runs a reacquire tool call with the arguments
        the model produced (a JSON string, sent as it is, or a dict). Returns the spill; its
        `text` is the tool result."""
        return cast(Spill, self.request(*self._reacquire_call(session, arguments)))

    def tools(self, session: str, format: Format) -> SessionTools:
        """GET /v1/sessions/{session}/tools: the reacquire tool in a provider's tool schema
        (`openai`, `anthropic` or `openai-responses`)."""
        return cast(SessionTools, self.request(*self._tools(session, format)))

    def list_spills(self, session: str) -> SpillList:
        """GET /v1/sessions/{session}/spills: every stored version of every spill."""
        return cast(SpillList, self.request(*self._list_spills(session)))

    def delete_session(self, session: str) -> None:
        """DELETE /v1/sessions/{session}: every spill and the decision log go."""
        self.request(*self._delete_session(session))
