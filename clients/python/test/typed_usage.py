"""The client's answers used as a program would, with their types: mypy --strict checks this
file (test_types.py), and test_types.py runs it against a real compactd, so the types it
relies on are the answers' own."""

from __future__ import annotations

from compactd import ERROR_STATUS, Compactd, CompactionFailure, InvalidRequest, NotFound, parse_pointer
from compactd.aio import AsyncCompactd
from compactd.types import (CompactResult, ExternalizedEntry, MessagesCompactResult, SessionTools, Spill, SpillList,
                            TokensResult, VerifyResult)

LOG = "make: *** [Makefile:42: billing.o] Error 1\n" * 40


def units(c: Compactd, session: str) -> tuple[int, str, str]:
    """Spills a log, reads it back by its pointer and its key: (tokens used, text, text)."""
    r: CompactResult = c.compact_units(session, [{"key": "task", "class": "protected", "text": "Never push."},
                                                 {"key": "build.log", "class": "protected", "text": LOG}], 80)
    spilled: ExternalizedEntry = r["externalized"][0]
    parsed = parse_pointer(spilled["pointer"])
    assert parsed is not None and parsed[0] == spilled["key"]
    back: Spill = c.reacquire(session, spilled["pointer"])
    by_key: Spill = c.get_spill(session, spilled["key"], spilled["sha256"][:16])
    listed: SpillList = c.list_spills(session)
    assert [s["key"] for s in listed["spills"]] == ["build.log"]
    return r["used_tokens"], back["text"], by_key["text"]


def messages(c: Compactd, session: str) -> tuple[int, str | None, str, int | None]:
    """A history compacted and audited: (messages kept, the first decision's pointer, how the
    plan came about, the low-water mark it was planned down to)."""
    history = [{"role": "user", "content": "Why does the build fail?\n" + LOG}, {"role": "assistant", "content": "ok"}]
    r: MessagesCompactResult = c.compact_messages(session, history, 60, format="openai")
    audit: VerifyResult = c.verify(session, str(r["messages"]), [{"key": "task", "class": "protected",
                                                                   "text": "Never push."}])
    assert audit["verdict"] in ("safe", "silent_truncation")
    first = r["decisions"][0]
    return len(r["messages"]), first.get("pointer"), r["plan"], r.get("low_water")


def the_rest(c: Compactd, session: str) -> tuple[int, str, int]:
    """Token counts, the tools, and the errors' typed fields: (total, tools' format, least budget)."""
    counts: TokensResult = c.count_tokens(["hello", "world"], "o200k_base")
    tools: SessionTools = c.tools(session, "anthropic")
    name = tools["format"]
    try:
        c.compact_units(session, [{"key": "big", "class": "protected", "text": LOG}], 1)
        least = 0
    except CompactionFailure as e:
        assert e.status == ERROR_STATUS["CompactionFailure"]
        least = e.required_budget
    try:
        c.get_spill(session, "nothing-here")
    except NotFound as e:
        assert e.detail["type"] == "NotFound"
    try:
        c.compact_units(session, [], -1)
    except InvalidRequest as e:
        assert e.path is not None and e.path.startswith("$")
    c.delete_session(session)
    return counts["total"], name, least


async def async_units(c: AsyncCompactd, session: str) -> str:
    """The same answers' types from the asyncio client: the text spilled, read back."""
    r: CompactResult = await c.compact_units(session, [{"key": "build.log", "class": "protected", "text": LOG}], 80)
    back: Spill = await c.reacquire(session, r["externalized"][0]["pointer"])
    await c.delete_session(session)
    return back["text"]
