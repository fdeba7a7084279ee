"""Reading a judge's answer: a tolerant parse of its JSON object, then strict validation.

The parse strips reasoning blocks (``<think>...</think>``, or everything up to an orphan
``</think>``) and one code fence, then decodes the first complete JSON object from the first
``{``; text after it is ignored. It never reads numbers out of prose and never fills in a
missing document. Validation then checks the object: one entry per passage number ``1..w``,
Stage A values numbers in [-5, 5], Stage B values objects of booleans (or 0/1) for every
criterion.

A failed answer has one category: ``unparsable`` (no JSON object), ``wrong-count`` (a passage
missing, unknown or a wrong shape), ``out-of-range`` (a score outside [-5, 5]), ``refusal``
(the endpoint refused the request, or the model's message is a refusal), ``length`` (cut by
the output limit) or ``server-error`` (no answer after the retries).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

CATEGORIES = ("unparsable", "wrong-count", "out-of-range", "refusal", "length", "server-error")
PARSE_VERSION = 1
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_DECODER = json.JSONDecoder()
try:  # orjson (the judge extra): what json reads of a text that is one object, faster; a text
    # it refuses (NaN, 1e400, text around the object) is read by json as before, and an integer
    # beyond 64 bits, which it reads as a float, gives the same reading (float(v), or not 0/1)
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - json alone
    _fast_loads = None
_KEYS: dict[int, list[str]] = {}  # w -> ["1", ..., "w"], the keys of a well-formed answer


@dataclass(frozen=True)
class Reading:
    """An answer as read: ``values`` (Stage A: a score or None per passage; Stage B: a list
    of 0/1 per criterion, or None, per passage) and ``category`` None when valid."""

    values: list | None
    category: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.category is None


def extract_object(text: str) -> dict | None:
    """The first complete JSON object of ``text`` after reasoning and fences are removed."""
    if text is None:
        return None
    if "<" in text:  # no "<": no reasoning block to strip
        text = _THINK.sub("", text)
        close = text.lower().rfind("</think>")
        if close >= 0 and text.find("{", close) >= 0:
            text = text[close + len("</think>"):]
    if "```" in text:
        m = _FENCE.match(text)
        if m:
            text = m.group(1)
    stripped = text.strip()
    if stripped[:1] == "{" and _fast_loads is not None:  # the whole answer one object (most)
        try:
            obj = _fast_loads(stripped)
        except ValueError:
            pass
        else:
            if isinstance(obj, dict):
                return obj
    start = text.find("{")
    decoder = _DECODER
    while start >= 0:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        return obj if isinstance(obj, dict) else None
    return None


def _entries(obj: dict, w: int) -> tuple[dict[int, object], str]:
    """Passage number -> value, and what is wrong with the keys ('' when nothing)."""
    keys = _KEYS.get(w)
    if keys is None:
        keys = _KEYS[w] = [str(i + 1) for i in range(w)]
    if list(obj) == keys:  # the common case, read at once
        return {i: v for i, v in enumerate(obj.values(), start=1)}, ""
    if len(obj) == 1 and isinstance(next(iter(obj.values())), dict) and str(
            next(iter(obj))) not in {str(i + 1) for i in range(w)}:
        obj = next(iter(obj.values()))  # one wrapper object ({"scores": {...}})
    out: dict[int, object] = {}
    bad = []
    for k, v in obj.items():
        key = str(k).strip().strip("[]")
        if not key.isdigit() or not 1 <= int(key) <= w:
            bad.append(str(k))
            continue
        out[int(key)] = v
    missing = [i for i in range(1, w + 1) if i not in out]
    problem = ""
    if bad or missing:
        problem = (f"{w} passages asked, {len(out)} answered"
                   + (f"; unknown keys {bad[:3]}" if bad else "")
                   + (f"; missing {missing[:5]}" if missing else ""))
    return out, problem


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def read_stage_a(text: str | None, w: int, *, finish_reason: str | None = None) -> Reading:
    obj = extract_object(text or "")
    if obj is None:
        return _failed(text, finish_reason, "no JSON object in the answer")
    entries, problem = _entries(obj, w)
    values: list = [None] * w
    for i, v in entries.items():
        if _is_number(v):
            values[i - 1] = float(v)
    if problem or any(v is None for v in values):
        wrong = [i for i, v in entries.items() if not _is_number(v)]
        detail = problem or f"passages {wrong[:5]} have no numeric score"
        return Reading(values, "length" if finish_reason == "length" else "wrong-count", detail)
    out = [v for v in values if not -5 <= v <= 5]
    if out:
        return Reading(values, "out-of-range", f"scores {out[:3]} are outside [-5, 5]")
    return Reading(values)


def _bool(v: object) -> int | None:
    if v is True or v is False:
        return int(v)
    if type(v) is int and v in (0, 1):
        return v
    return None


def read_stage_b(text: str | None, w: int, criteria: list[str], *,
                 finish_reason: str | None = None) -> Reading:
    obj = extract_object(text or "")
    if obj is None:
        return _failed(text, finish_reason, "no JSON object in the answer")
    entries, problem = _entries(obj, w)
    values: list = [None] * w
    broken = []
    known = frozenset(criteria)
    for i, v in entries.items():
        # every criterion answered true/false (or 0/1), and no other key
        row = [1 if x is True else 0 if x is False else _bool(x)
               for x in map(v.get, criteria)] if isinstance(v, dict) and len(
            v) == len(known) and known.issuperset(v) else None
        if row is None or None in row:
            broken.append(i)
            continue
        values[i - 1] = row
    if problem or broken:
        detail = problem or f"passages {broken[:5]} lack a true/false answer per criterion"
        return Reading(values, "length" if finish_reason == "length" else "wrong-count", detail)
    return Reading(values)


_REFUSAL = re.compile(r"^\s*(i\s*(can(no|')t|am (not able|unable)|won't)|sorry|i'm sorry)",
                      re.IGNORECASE)


def _failed(text: str | None, finish_reason: str | None, detail: str) -> Reading:
    if finish_reason == "length":
        return Reading(None, "length", "the answer was cut by the output limit")
    if text and _REFUSAL.match(_THINK.sub("", text)):
        return Reading(None, "refusal", "the model declined to answer")
    return Reading(None, "unparsable", detail)


def read_answer(stage: str, text: str | None, w: int, criteria: list[str], *,
                finish_reason: str | None = None) -> Reading:
    if stage == "A":
        return read_stage_a(text, w, finish_reason=finish_reason)
    return read_stage_b(text, w, criteria, finish_reason=finish_reason)
