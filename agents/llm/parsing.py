"""Reading the model's answer: the JSON schema, tolerant extraction, and why an answer was rejected.

The answer is a JSON object ``{"action_id": <int>}`` (``{"reasoning": "...", "action_id": <int>}``
in chain-of-thought mode) whose ``action_id`` is one of the ids of the candidate table.
:func:`answer_schema` gives the JSON schema (sent as ``response_format`` where the server supports
it); :func:`parse_answer` reads the answer out of whatever the model wrote:

1. ``<think>...</think>`` blocks (reasoning models) are dropped, and so is the text before a ``</think>`` left
   without its ``<think>`` (a chat template that opens the block in the prompt, e.g. DeepSeek-R1's);
2. the whole text is tried as JSON, then every ``{`` outside the objects already read (and before the
   last ``"action_id"``: none after it can hold one) is tried as the start of a JSON object (prose or a
   Markdown fence around the object is fine); the last of these top-level objects with an ``action_id``
   wins (one nested inside another never does);
3. ``action_id`` must be an integer (``3``, ``3.0`` and ``"3"`` are accepted, ``true`` is not);
4. it must be one of the legal ids.

Each failure has a reason (:data:`REASONS`): ``empty`` (no text), ``invalid_json`` (no object with
an integer ``action_id``), ``illegal_action`` (an id not in the table). ``error`` is the fourth reason
a decision falls back: the request itself failed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

#: Why an answer (or a decision) was rejected, in the order they are checked.
REASONS = ("empty", "invalid_json", "illegal_action", "error")

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_THINK_END = re.compile(r"</think>", re.IGNORECASE)
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')  # JSON's only whitespace, then a key or the end: no other can parse


@dataclass(frozen=True)
class Answer:
    """A parsed answer: ``action_id`` when valid, else ``reason`` (one of :data:`REASONS`) and ``detail``."""

    action_id: int | None
    reason: str | None = None
    detail: str = ""
    reasoning: str | None = None

    @property
    def ok(self) -> bool:
        """True for a legal action id."""
        return self.action_id is not None


def answer_schema(legal: Collection[int], reasoning: bool) -> dict[str, Any]:
    """The JSON schema of an answer choosing one of ``legal`` (with a leading ``reasoning`` string if asked)."""
    properties: dict[str, Any] = {}
    if reasoning:
        properties["reasoning"] = {"type": "string"}
    properties["action_id"] = {"type": "integer", "enum": sorted(int(i) for i in legal)}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _objects(text: str) -> list[Any]:
    """The top-level JSON objects of ``text`` that may hold an ``action_id``: the whole text, else each one starting
    at a ``{`` that no object read before contains and before the last ``"action_id"``. Nesting deep enough to
    exhaust the recursion limit reads as no object."""
    try:
        return [json.loads(text)]
    except (ValueError, RecursionError):
        pass
    # a failed decode costs time in proportion to its position (JSONDecodeError counts the lines before it): a
    # degenerate reply of many '{' without the key took seconds to minutes; an object after the key cannot hold it,
    # and a '{' that no key or '}' follows starts none (10^5 characters of "{\n" took 4 s)
    last = text.rfind('"action_id"')
    decoder, found, end = json.JSONDecoder(), [], 0
    for match in _OBJECT_START.finditer(text, 0, last + 1):  # up to the key's opening quote; none when -1
        if match.start() < end:
            continue
        try:
            obj, end = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        found.append(obj)
    return found


def action_id(value: Any) -> int | None:
    """``value`` as an action id (``3``, ``3.0`` and ``"3"`` are 3), or None (``true``, ``3.5``, ``"three"``, a
    string of more digits than Python converts, digits other than ASCII's)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?[0-9]{1,4000}\s*", value):
        return int(value)
    return None


def parse_answer(content: str | None, legal: Collection[int]) -> Answer:
    """The answer in ``content`` (module docstring); never raises."""
    text = _THINK_END.split(_THINK.sub("", content or ""))[-1].strip()
    if not text:
        return Answer(None, "empty", "the model returned no text")
    candidates = [o for o in _objects(text) if isinstance(o, dict) and "action_id" in o]
    if not candidates:
        return Answer(None, "invalid_json", f"no JSON object with an action_id in {text[:200]!r}")
    obj = candidates[-1]
    reasoning = obj.get("reasoning") if isinstance(obj.get("reasoning"), str) else None
    action = action_id(obj["action_id"])
    if action is None:
        return Answer(None, "invalid_json", f"action_id must be an integer, got {repr(obj['action_id'])[:200]}",
                      reasoning)
    if action not in legal:
        return Answer(None, "illegal_action", f"action_id {action} is not in the table {sorted(legal)}", reasoning)
    return Answer(action, reasoning=reasoning)
