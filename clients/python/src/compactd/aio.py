"""The compactd client for asyncio: the same operations as Compactd, each a coroutine, over
HTTP/1.1 on asyncio's streams (standard library only), and the reacquire tools' turns with
handlers that may be coroutine functions."""

from __future__ import annotations

import asyncio
import inspect
import ssl
import urllib.parse
from typing import Any, cast

from .client import _forcing, _Operations
from .definitions import Format
from .errors import CompactdError, CompactionFailure, Timeout, TransportError
from .types import (CompactResult, MessagesCompactResult, MessagesVerifyResult, SessionTools, Spill, SpillList,
                    TokensResult, VerifyResult)
from .tools import (_MODEL_ERRORS, Answer, Call, Handlers, _anthropic_steps, _handler_args,
                    _is_reacquire, _openai_steps, _page_text, _responses_steps)

__all__ = ["AsyncCompactd", "run_reacquire", "openai_turn", "anthropic_turn", "responses_turn"]

# Headers past this are no answer of compactd's.
_MAX_HEAD = 64 * 1024


class AsyncCompactd(_Operations):
    """A compactd server at `base_url`, for asyncio: every operation of Compactd (the same
    names, arguments and answers) is a coroutine. `api_key` is sent as a Bearer token,
    `headers` on every request; `timeout` bounds each attempt in seconds (Timeout when it
    passes); `ssl_context` is used for https:// (the default context when None).

    Retries as Compactd's: a 503 Overloaded after its Retry-After; a 503 StoreUnavailable,
    a failed connection or a timeout only where a resend is safe (reads, deletes, and
    compactions, whose Idempotency-Key is the same on each attempt); never a 4xx. Each
    request opens its own connection, so one client serves any number of concurrent tasks.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", api_key: str | None = None,
                 timeout: float = 60.0, headers: dict[str, str] | None = None, max_retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 8.0, ssl_context: ssl.SSLContext | None = None):
        self._configure(base_url, api_key, timeout, headers, max_retries, backoff, max_backoff)
        url = urllib.parse.urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError("base_url must be an http:// or https:// URL: %r" % base_url)
        self._host = url.hostname
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._prefix = url.path
        self._ssl = (ssl_context or ssl.create_default_context()) if url.scheme == "https" else None
        self._host_header = url.netloc.rsplit("@", 1)[-1]

    # ---- Transport ----

    async def request(self, method: str, path: str, body: Any = None, raw_body: str | None = None,
                      headers: dict[str, str] | None = None) -> Any:
        """Sends a request, retried as the class says; returns the parsed body (None when
        empty) or raises the typed error."""
        extra = dict(headers or {})
        safe = self._safe(method, extra)
        attempt = 0
        while True:
            try:
                return await self._send(method, path, body, raw_body, extra)
            except CompactdError as e:
                delay = self._retry_delay(e, attempt, safe)
                if delay is None:
                    raise
                attempt += 1
                await asyncio.sleep(delay)

    async def _send(self, method: str, path: str, body: Any, raw_body: str | None, extra: dict[str, str]) -> Any:
        """One attempt: a connection of its own, the request, the whole answer, within timeout."""
        headers = self._request_headers(extra)
        data = self._payload(body, raw_body, headers)
        try:
            status, raw, retry_after = await asyncio.wait_for(self._exchange(method, path, headers, data),
                                                              self.timeout)
        except asyncio.TimeoutError as e:
            raise Timeout("%s %s: no answer within %gs" % (method, path, self.timeout)) from e
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
            raise TransportError("%s %s: %s" % (method, path, e)) from e
        return self._answer(method, path, status, raw, retry_after)

    async def _exchange(self, method: str, path: str, headers: dict[str, str],
                        data: bytes | None) -> tuple[int, bytes, str | None]:
        reader, writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl, limit=_MAX_HEAD)
        try:
            head = ["%s %s HTTP/1.1" % (method, self._prefix + path), "Host: " + self._host_header,
                    "Connection: close", "Content-Length: %d" % len(data or b"")]
            head += ["%s: %s" % (k, v) for k, v in headers.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + (data or b""))
            await writer.drain()
            return await _read_answer(reader, method)
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    # ---- Operations: Compactd's, each a coroutine ----

    async def compact_units(self, session: str, units: list[dict[str, Any]], budget: int,
                            idempotency_key: str | None = None, **options: Any) -> CompactResult:
        """POST /v1/sessions/{session}/compact, as Compactd.compact_units."""
        call = self._compact_units(session, units, budget, idempotency_key, options)
        return cast(CompactResult, await self.request(*call))

    async def compact_messages(self, session: str, messages: list[dict[str, Any]], budget: int,
                               format: Format = "openai", idempotency_key: str | None = None,
                               **options: Any) -> MessagesCompactResult:
        """POST /v1/sessions/{session}/messages/compact, as Compactd.compact_messages."""
        call, kept = self._messages_request(session, messages, budget, format, idempotency_key, options)
        try:
            return cast(MessagesCompactResult, await self.request(*call))
        except CompactionFailure as e:
            _forcing(e, messages, kept)
            raise

    async def verify(self, session: str, context: str, units: list[dict[str, Any]], **options: Any) -> VerifyResult:
        """POST /v1/sessions/{session}/verify, as Compactd.verify."""
        return cast(VerifyResult, await self.request(*self._verify(session, context, units, options)))

    async def verify_messages(self, session: str, messages: list[dict[str, Any]], units: list[dict[str, Any]],
                              format: Format = "openai", **options: Any) -> MessagesVerifyResult:
        """POST /v1/sessions/{session}/messages/verify, as Compactd.verify_messages."""
        call = self._verify_messages(session, messages, units, format, options)
        return cast(MessagesVerifyResult, await self.request(*call))

    async def count_tokens(self, texts: list[str], tokenizer: str | None = None) -> TokensResult:
        """POST /v1/tokens, as Compactd.count_tokens."""
        return cast(TokensResult, await self.request(*self._count_tokens(texts, tokenizer)))

    async def get_spill(self, session: str, key: str, sha256: str | None = None) -> Spill:
        """GET one spill, as Compactd.get_spill."""
        return cast(Spill, await self.request(*self._get_spill(session, key, sha256)))

    async def reacquire(self, session: str, pointer: str) -> Spill:
        """The spill a pointer text names, as Compactd.reacquire."""
        return cast(Spill, await self.request(*self._reacquire(session, pointer)))

    async def reacquire_call(self, session: str, arguments: Any) -> Spill:
        """POST /v1/sessions/{session}/reacquire, as Compactd.reacquire_call."""
        return cast(Spill, await self.request(*self._reacquire_call(session, arguments)))

    async def tools(self, session: str, format: Format) -> SessionTools:
        """GET /v1/sessions/{session}/tools, as Compactd.tools."""
        return cast(SessionTools, await self.request(*self._tools(session, format)))

    async def list_spills(self, session: str) -> SpillList:
        """GET /v1/sessions/{session}/spills, as Compactd.list_spills."""
        return cast(SpillList, await self.request(*self._list_spills(session)))

    async def delete_session(self, session: str) -> None:
        """DELETE /v1/sessions/{session}, as Compactd.delete_session."""
        await self.request(*self._delete_session(session))


async def _read_answer(reader: asyncio.StreamReader, method: str) -> tuple[int, bytes, str | None]:
    """An HTTP/1.1 answer's status, body (by Content-Length, chunks, or to the end) and Retry-After."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    parts = head[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ValueError("not an HTTP/1.1 answer: %r" % head[0][:80])
    status = int(parts[1])
    fields: dict[str, str] = {}
    for line in head[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
    if method == "HEAD" or status in (204, 304):
        body = b""
    elif "chunked" in fields.get("transfer-encoding", "").lower():
        body = await _read_chunks(reader)
    elif "content-length" in fields:
        body = await reader.readexactly(int(fields["content-length"]))
    else:
        body = await reader.read()
    return status, body, fields.get("retry-after")


async def _read_chunks(reader: asyncio.StreamReader) -> bytes:
    out = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return bytes(out)
        out += await reader.readexactly(size)
        await reader.readexactly(2)


# ---- The reacquire tools' turns ----

async def run_reacquire(client: AsyncCompactd, session: str, args: Any) -> Answer:
    """compactd.run_reacquire for AsyncCompactd: (text, is_error)."""
    try:
        return _page_text(await client.reacquire_call(session, args)), False
    except _MODEL_ERRORS as e:
        return "compactd: " + e.message, True


async def _answer(client: AsyncCompactd, session: str, handlers: Handlers, call: Call) -> Answer:
    if _is_reacquire(call):
        return await run_reacquire(client, session, call[2])
    if call[1] not in handlers:
        return "no handler for tool " + call[1], True
    text = handlers[call[1]](_handler_args(call))
    return (await text if inspect.isawaitable(text) else text), False


async def _drive(steps: Any, client: AsyncCompactd, session: str, handlers: Handlers | None) -> list[dict[str, Any]]:
    """Runs a turn's steps (compactd.tools), each call answered with an await."""
    answer: Any = None
    try:
        while True:
            answer = await _answer(client, session, handlers or {}, steps.send(answer))
    except StopIteration as done:
        entries: list[dict[str, Any]] = done.value
        return entries


async def openai_turn(client: AsyncCompactd, session: str, reply: dict[str, Any],
                      handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """compactd.openai_turn for AsyncCompactd; a handler may be a coroutine function."""
    return await _drive(_openai_steps(reply), client, session, handlers)


async def anthropic_turn(client: AsyncCompactd, session: str, content: list[dict[str, Any]],
                         handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """compactd.anthropic_turn for AsyncCompactd; a handler may be a coroutine function."""
    return await _drive(_anthropic_steps(content), client, session, handlers)


async def responses_turn(client: AsyncCompactd, session: str, output: list[dict[str, Any]],
                         handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """compactd.responses_turn for AsyncCompactd; a handler may be a coroutine function."""
    return await _drive(_responses_steps(output), client, session, handlers)
