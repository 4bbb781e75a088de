"""Client for compactd: compact an agent's context under a token budget, re-acquire what was spilled."""

from .client import Compactd, Format, encode_key, parse_pointer
from .definitions import FORMATS, REACQUIRE_TOOLS
from .errors import (ERROR_STATUS, Ambiguous, CompactdError, CompactionFailure, Forbidden, InvalidPointer,
                     InvalidRequest, NotFound, Overloaded, PayloadTooLarge, StoreUnavailable, Timeout, TransportError,
                     Unauthorized, error_from_response)
from .tools import (ANTHROPIC_REACQUIRE_TOOL, OPENAI_REACQUIRE_TOOL, REACQUIRE_TOOL_NAME, RESPONSES_REACQUIRE_TOOL,
                    anthropic_turn, openai_turn, responses_turn, run_reacquire)

__all__ = [
    "Compactd", "Format", "FORMATS", "encode_key", "parse_pointer", "ERROR_STATUS", "REACQUIRE_TOOLS",
    "CompactdError", "InvalidRequest", "CompactionFailure", "Unauthorized", "Forbidden", "PayloadTooLarge", "NotFound",
    "Ambiguous",
    "StoreUnavailable", "Overloaded", "TransportError", "Timeout", "InvalidPointer", "error_from_response",
    "REACQUIRE_TOOL_NAME", "OPENAI_REACQUIRE_TOOL", "ANTHROPIC_REACQUIRE_TOOL", "RESPONSES_REACQUIRE_TOOL",
    "run_reacquire", "openai_turn", "anthropic_turn", "responses_turn",
]
