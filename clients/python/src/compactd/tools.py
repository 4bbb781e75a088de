"""The reacquire tool as plain dicts in OpenAI's (Chat Completions and Responses) and Anthropic's
tool schemas, and the executors that turn a model reply into history entries."""

from __future__ import annotations

import json
from typing import Any, Callable, Generator

from .client import Compactd
from .definitions import REACQUIRE_TOOL_NAME, REACQUIRE_TOOLS
from .errors import Ambiguous, InvalidPointer, InvalidRequest, NotFound
from .types import Spill

__all__ = [
    "REACQUIRE_TOOL_NAME", "OPENAI_REACQUIRE_TOOL", "ANTHROPIC_REACQUIRE_TOOL", "RESPONSES_REACQUIRE_TOOL",
    "run_reacquire", "openai_turn", "anthropic_turn", "responses_turn",
]

# The definitions GET /v1/sessions/{session}/tools answers (the per-session MCP endpoint's
# reacquire), written from spec/shared.json as the server's are, so that a tool list is
# built without a request.
OPENAI_REACQUIRE_TOOL: dict[str, Any] = REACQUIRE_TOOLS["openai"]
ANTHROPIC_REACQUIRE_TOOL: dict[str, Any] = REACQUIRE_TOOLS["anthropic"]
RESPONSES_REACQUIRE_TOOL: dict[str, Any] = REACQUIRE_TOOLS["openai-responses"]

Handlers = dict[str, Callable[[Any], Any]]
# A call a turn has answered: ("function", name, JSON arguments string), ("custom", name,
# raw input text) or ("object", name, input object); and its answer: (text, is_error).
Call = tuple[str, str, Any]
Answer = tuple[str, bool]
# The errors of a reacquire call the model can act on; store and auth errors raise.
_MODEL_ERRORS = (InvalidRequest, InvalidPointer, NotFound, Ambiguous)


def _page_text(spill: Spill) -> str:
    """A reacquire result: the text, and after a page that is not the last (the model passed
    max_tokens) the note saying where to read on."""
    return spill["text"] + "\n\n" + spill["note"] if "note" in spill else spill["text"]


def run_reacquire(client: Compactd, session: str, args: Any) -> Answer:
    """Runs one reacquire call through POST /v1/sessions/{session}/reacquire with the model's
    arguments (OpenAI's JSON string as it came, or a dict): (text, is_error). Arguments the
    server refuses and an unknown or ambiguous pointer are an error result the model can act
    on; store and auth errors raise."""
    try:
        return _page_text(client.reacquire_call(session, args)), False
    except _MODEL_ERRORS as e:
        return "compactd: " + e.message, True


def _is_reacquire(call: Call) -> bool:
    """reacquire's arguments go to compactd as the model wrote them."""
    return call[1] == REACQUIRE_TOOL_NAME and call[0] != "custom"


def _handler_args(call: Call) -> Any:
    """What a handler gets: a function call's arguments parsed, else the input as it came."""
    kind, _, args = call
    if kind != "function":
        return args
    try:
        return json.loads(args)
    except ValueError:
        return None


def _answer(client: Compactd, session: str, handlers: Handlers, call: Call) -> Answer:
    if _is_reacquire(call):
        return run_reacquire(client, session, call[2])
    if call[1] not in handlers:
        return "no handler for tool " + call[1], True
    return handlers[call[1]](_handler_args(call)), False


def _drive(steps: Any, client: Compactd, session: str, handlers: Handlers | None) -> list[dict[str, Any]]:
    """Runs a turn's steps: each call it yields is answered, and the answer sent back in."""
    answer: Any = None
    try:
        while True:
            answer = _answer(client, session, handlers or {}, steps.send(answer))
    except StopIteration as done:
        entries: list[dict[str, Any]] = done.value
        return entries


# The turns, written once as generators of the calls to answer (compactd.aio drives them
# with awaits): each yields a Call, gets its Answer, and returns the history entries.

def _openai_steps(reply: dict[str, Any]) -> Generator[Call, Answer, list[dict[str, Any]]]:
    msg = dict(reply)
    msg.setdefault("role", "assistant")
    if isinstance(reply.get("audio"), dict):
        msg["audio"] = {"id": reply["audio"]["id"]}
    calls = reply.get("tool_calls") or []
    if not calls and msg.get("content") is None and not reply.get("audio") and not reply.get("refusal") \
            and not reply.get("function_call"):
        msg["content"] = ""
    out = [msg]
    for c in calls:
        call = ("custom", c["custom"]["name"], c["custom"]["input"]) if c.get("type") == "custom" \
            else ("function", c["function"]["name"], c["function"]["arguments"])
        text, _ = yield call
        out.append({"role": "tool", "tool_call_id": c["id"], "content": text})
    return out


def _responses_steps(output: list[dict[str, Any]]) -> Generator[Call, Answer, list[dict[str, Any]]]:
    out = list(output)
    for item in output:
        if item.get("type") == "function_call":
            text, _ = yield ("function", item["name"], item["arguments"])
            out.append({"type": "function_call_output", "call_id": item["call_id"], "output": text})
        elif item.get("type") == "custom_tool_call":
            text, _ = yield ("custom", item["name"], item["input"])
            out.append({"type": "custom_tool_call_output", "call_id": item["call_id"], "output": text})
    return out


def _anthropic_steps(content: list[dict[str, Any]]) -> Generator[Call, Answer, list[dict[str, Any]]]:
    results: list[dict[str, Any]] = []
    for b in content:
        if b.get("type") != "tool_use":
            continue
        text, is_error = yield ("object", b["name"], b["input"])
        r: dict[str, Any] = {"type": "tool_result", "tool_use_id": b["id"], "content": text}
        if is_error:
            r["is_error"] = True
        results.append(r)
    out: list[dict[str, Any]] = [{"role": "assistant", "content": [dict(b) for b in content] or ""}]
    if results:
        out.append({"role": "user", "content": results})
    return out


def openai_turn(client: Compactd, session: str, reply: dict[str, Any],
                handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """History entries for an OpenAI Chat Completions reply message (a dict): the reply as
    the API returned it, every member kept (annotations, refusal, tool calls of any type),
    its audio referred to by id as a request does, then one tool message per call, in call
    order: reacquire answered by compactd, other function calls by their handler (parsed
    arguments), custom tool calls by theirs (the raw input text)."""
    return _drive(_openai_steps(reply), client, session, handlers)


def responses_turn(client: Compactd, session: str, output: list[dict[str, Any]],
                   handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """Input items for a Responses API response's `output` items (dicts): the items as the API
    returned them, in their order (its reasoning must come back with the calls that followed it),
    then a function_call_output per function call and a custom_tool_call_output per custom tool
    call (whose handler gets the raw `input` text), matched by call_id, in call order."""
    return _drive(_responses_steps(output), client, session, handlers)


def anthropic_turn(client: Compactd, session: str, content: list[dict[str, Any]],
                   handlers: Handlers | None = None) -> list[dict[str, Any]]:
    """History entries for an Anthropic reply's content blocks (dicts): the assistant turn,
    its blocks as the API returned them, every block and member kept, in their order
    (thinking, which tool use with extended thinking wants back unchanged; text with its
    citations; server tool calls and their results; tool_use), then, when it calls tools,
    one user turn of a tool_result per tool_use."""
    return _drive(_anthropic_steps(content), client, session, handlers)
