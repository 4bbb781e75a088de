"""The reacquire tool as plain dicts in OpenAI's and Anthropic's tool schemas, and its executor."""

from __future__ import annotations

import json
from typing import Any, Callable

from .client import Compactd
from .errors import Ambiguous, InvalidPointer, NotFound

__all__ = [
    "REACQUIRE_TOOL_NAME", "OPENAI_REACQUIRE_TOOL", "ANTHROPIC_REACQUIRE_TOOL",
    "run_reacquire", "openai_turn", "anthropic_turn",
]

REACQUIRE_TOOL_NAME = "compactd_reacquire"
_DESCRIPTION = (
    "Read back, byte for byte, a context item compactd moved out of the conversation. "
    "Call it with a pointer exactly as it appears in the conversation, "
    'e.g. "[externalized build.log sha256:5d1e0a3b9c7f2e41]".'
)
_PARAMETERS = {
    "type": "object",
    "properties": {"pointer": {"type": "string", "description": "The pointer text exactly as in the conversation."}},
    "required": ["pointer"],
    "additionalProperties": False,
}

OPENAI_REACQUIRE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": REACQUIRE_TOOL_NAME, "description": _DESCRIPTION, "parameters": _PARAMETERS},
}
ANTHROPIC_REACQUIRE_TOOL: dict[str, Any] = {
    "name": REACQUIRE_TOOL_NAME, "description": _DESCRIPTION, "input_schema": _PARAMETERS,
}

Handlers = dict[str, Callable[[Any], str]]


def run_reacquire(client: Compactd, session: str, args: Any) -> tuple[str, bool]:
    """Runs one reacquire call: (text, is_error). An unknown, ambiguous or malformed
    pointer is an error result the model can act on; store and auth errors raise."""
    pointer = args.get("pointer") if isinstance(args, dict) else None
    if not isinstance(pointer, str):
        return 'compactd_reacquire needs {"pointer": "<the pointer text>"}', True
    try:
        return client.reacquire(session, pointer)["text"], False
    except (InvalidPointer, NotFound, Ambiguous) as e:
        return "compactd: " + e.message, True


def _run(client: Compactd, session: str, name: str, args: Any, handlers: Handlers) -> tuple[str, bool]:
    if name == REACQUIRE_TOOL_NAME:
        return run_reacquire(client, session, args)
    if name not in handlers:
        return "no handler for tool " + name, True
    return handlers[name](args), False


def openai_turn(client: Compactd, session: str, reply: dict[str, Any],
                handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """History entries for an OpenAI Chat Completions reply message (a dict): the
    assistant message as a request message and one tool message per call."""
    calls = [c for c in reply.get("tool_calls") or [] if c.get("type") == "function"]
    msg: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    if calls:
        msg["tool_calls"] = [{"id": c["id"], "type": "function",
                              "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                             for c in calls]
    elif msg["content"] is None:
        msg["content"] = ""
    out = [msg]
    for c in calls:
        try:
            args = json.loads(c["function"]["arguments"])
        except ValueError:
            args = None
        text, _ = _run(client, session, c["function"]["name"], args, handlers or {})
        out.append({"role": "tool", "tool_call_id": c["id"], "content": text})
    return out


def anthropic_turn(client: Compactd, session: str, content: list[dict[str, Any]],
                   handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """History entries for an Anthropic reply's content blocks (dicts): the assistant
    turn (text and tool_use blocks) and, when it calls tools, one user turn of tool_results."""
    blocks: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for b in content:
        if b.get("type") == "text":
            blocks.append({"type": "text", "text": b["text"]})
        elif b.get("type") == "tool_use":
            blocks.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]})
            text, is_error = _run(client, session, b["name"], b["input"], handlers or {})
            r: dict[str, Any] = {"type": "tool_result", "tool_use_id": b["id"], "content": text}
            if is_error:
                r["is_error"] = True
            results.append(r)
    out: list[dict[str, Any]] = [{"role": "assistant", "content": blocks or ""}]
    if results:
        out.append({"role": "user", "content": results})
    return out
