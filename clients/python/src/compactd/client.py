"""The compactd HTTP client: one method per REST operation over urllib."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Literal

from .errors import CompactionFailure, InvalidPointer, TransportError, error_from_response

__all__ = ["Compactd", "encode_key", "parse_pointer", "Format"]

# Chat Completions, Anthropic Messages, and the Responses API's input items.
Format = Literal["openai", "anthropic", "openai-responses"]

_UNRESERVED = re.compile(rb"[A-Za-z0-9._~-]")
_POINTER = re.compile(r"^\[externalized ([^\[\]]+) sha256:([0-9a-f]{16,64})\]$")


def encode_key(key: str) -> str:
    """Percent-encodes every UTF-8 byte outside A-Z a-z 0-9 . _ ~ -, as compactd's hrefs do."""
    return "".join(chr(b) if _UNRESERVED.match(bytes([b])) else "%%%02X" % b for b in key.encode("utf-8"))


def parse_pointer(pointer: str) -> tuple[str, str] | None:
    """The (key, sha256 prefix) of `[externalized <key> sha256:<hex>]`, or None."""
    m = _POINTER.match(pointer.strip())
    if not m:
        return None
    # The key's %, [ and ] are written %25, %5B and %5D in a pointer.
    key = m.group(1).replace("%5B", "[").replace("%5D", "]").replace("%25", "%")
    return key, m.group(2)


class Compactd:
    """A compactd server at `base_url`; `api_key` is sent as a Bearer token.

    `opener` replaces urllib's (a urllib.request.OpenerDirector), so a caller
    can route requests through its own handlers; `headers` go on every request.
    """

    def __init__(self, base_url: str = "http://127.0.0.1:8080", api_key: str | None = None,
                 timeout: float = 60.0, opener: urllib.request.OpenerDirector | None = None,
                 headers: dict[str, str] | None = None):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._opener = opener or urllib.request.build_opener()

    # ---- Transport ----

    def request(self, method: str, path: str, body: Any = None, raw_body: str | None = None) -> Any:
        """Sends one request; returns the parsed body (None when empty) or raises the typed error.
        `raw_body`, when given, is sent as it is instead of `body` written as JSON."""
        headers = {"Accept": "application/json", **self.headers}
        if self.api_key is not None:
            headers["Authorization"] = "Bearer " + self.api_key
        data = None
        if body is not None or raw_body is not None:
            headers["Content-Type"] = "application/json"
            text = raw_body if raw_body is not None else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
            data = text.encode("utf-8")
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=self.timeout) as resp:
                status, raw, retry_after = resp.status, resp.read(), resp.headers.get("Retry-After")
        except urllib.error.HTTPError as e:
            status, raw, retry_after = e.code, e.read(), e.headers.get("Retry-After")
        except (urllib.error.URLError, OSError) as e:
            raise TransportError("%s %s: %s" % (method, path, getattr(e, "reason", e))) from e
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

    # ---- Operations ----

    def compact_units(self, session: str, units: list[dict[str, Any]], budget: int, **options: Any) -> dict[str, Any]:
        """POST /v1/sessions/{session}/compact: plan a context of units under `budget`."""
        return self.request("POST", self._session(session) + "/compact", {**options, "budget": budget, "units": units})

    def compact_messages(self, session: str, messages: list[dict[str, Any]], budget: int,
                         format: Format = "openai", **options: Any) -> dict[str, Any]:
        """POST /v1/sessions/{session}/messages/compact: the whole answer; send its `messages`
        (and, for Anthropic, `system`; for the Responses API, as `input`, with `instructions`)
        to the model. A CompactionFailure carries the forcing message in `forcing`."""
        body = {**options, "format": format, "budget": budget, "messages": messages}
        try:
            return self.request("POST", self._session(session) + "/messages/compact", body)
        except CompactionFailure as e:
            if e.index is not None and 0 <= e.index < len(messages):
                e.forcing = [messages[e.index]]
            raise

    def verify(self, session: str, context: str, units: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
        """POST /v1/sessions/{session}/verify: audit a context string for silent truncation."""
        return self.request("POST", self._session(session) + "/verify", {**options, "context": context, "units": units})

    def verify_messages(self, session: str, messages: list[dict[str, Any]], units: list[dict[str, Any]],
                        format: Format = "openai", **options: Any) -> dict[str, Any]:
        """POST /v1/sessions/{session}/messages/verify: the audit over a chat history."""
        body = {**options, "format": format, "messages": messages, "units": units}
        return self.request("POST", self._session(session) + "/messages/verify", body)

    def count_tokens(self, texts: list[str], tokenizer: str | None = None) -> dict[str, Any]:
        """POST /v1/tokens: token counts under `tokenizer` (the server's default when None)."""
        body: dict[str, Any] = {"texts": texts}
        if tokenizer is not None:
            body["tokenizer"] = tokenizer
        return self.request("POST", "/v1/tokens", body)

    def get_spill(self, session: str, key: str, sha256: str | None = None) -> dict[str, Any]:
        """GET one spill by key and sha256 prefix (16-64 hex; without it, the version spilled last)."""
        q = "" if sha256 is None else "?sha256=" + urllib.parse.quote(sha256, safe="")
        return self.request("GET", self._session(session) + "/spills/" + encode_key(key) + q)

    def reacquire(self, session: str, pointer: str) -> dict[str, Any]:
        """The spill a pointer text names, read through POST .../reacquire (logged as a
        re-acquisition); InvalidPointer for a text that is no pointer."""
        if parse_pointer(pointer) is None:
            raise InvalidPointer(pointer)
        return self.reacquire_call(session, {"pointer": pointer})

    def reacquire_call(self, session: str, arguments: Any) -> dict[str, Any]:
        """POST /v1/sessions/{session}/reacquire: runs a reacquire tool call with the arguments
        the model produced (a JSON string, sent as it is, or a dict). Returns the spill; its
        `text` is the tool result."""
        path = self._session(session) + "/reacquire"
        if isinstance(arguments, str):
            return self.request("POST", path, raw_body=arguments)
        return self.request("POST", path, {} if arguments is None else arguments)

    def tools(self, session: str, format: str) -> dict[str, Any]:
        """GET /v1/sessions/{session}/tools: the reacquire tool in a provider's tool schema
        (`openai`, `anthropic` or `openai-responses`)."""
        return self.request("GET", self._session(session) + "/tools?format=" + urllib.parse.quote(format, safe=""))

    def list_spills(self, session: str) -> dict[str, Any]:
        """GET /v1/sessions/{session}/spills: every stored version of every spill."""
        return self.request("GET", self._session(session) + "/spills")

    def delete_session(self, session: str) -> None:
        """DELETE /v1/sessions/{session}: every spill and the decision log go."""
        self.request("DELETE", self._session(session))
