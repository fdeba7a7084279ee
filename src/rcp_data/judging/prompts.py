"""The Stage A and Stage B prompts, the rubric, and the answer schemas sent with them.

The project's own templates ship as package files (``templates/stage_a.txt``,
``templates/stage_b.txt``; ``$query``, ``$n``, ``$passages``, ``$criteria``, ``$ids`` are
filled in) and so does the default rubric (``templates/rubric_default.json``: the five criteria
of the paper's Table 1, in this project's words). A custom template or rubric file replaces
them. The sha256 of each template's bytes and of the rubric's canonical JSON identify them in
the store, the tables' manifest and the card.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from string import Template

from rcp_data.core.errors import InputError
from rcp_data.core.io import read_text

RESPONSE_FORMATS = ("json_schema", "json_object", "none")
SCORE_VALUES = ("bounded", "integers")  # the schema's score items: [-5, 5] numbers or -5..5


def _package_text(name: str) -> bytes:
    return resources.files("rcp_data.judging").joinpath("templates", name).read_bytes()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Criterion:
    id: str
    name: str
    question: str


@dataclass(frozen=True)
class Rubric:
    criteria: tuple[Criterion, ...]
    source: str = "default"

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.criteria]

    def canonical(self) -> bytes:
        return json.dumps([c.__dict__ for c in self.criteria], sort_keys=True,
                          separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @property
    def sha256(self) -> str:
        return sha256_bytes(self.canonical())


def load_rubric(path: str | Path | None = None) -> Rubric:
    """The default rubric, or a JSON list of ``{"id", "name", "question"}`` with ids C1..CK in
    order (the verdict table's columns); an error names the file, the entry and the field."""
    source = str(path) if path else "default"
    try:
        raw = json.loads(read_text(path) if path
                         else _package_text("rubric_default.json"))
    except FileNotFoundError as exc:
        raise InputError("rubric file not found", path=source) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at line {exc.lineno})", path=source) from exc
    if not isinstance(raw, list) or not raw:
        raise InputError("a rubric is a non-empty JSON list of criteria", path=source)
    seen: set[str] = set()
    criteria = []
    for k, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise InputError("a criterion is an object with id, name, question", path=source,
                             row=k)
        for key in ("id", "name", "question"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise InputError(f"missing or empty {key!r}", path=source, row=k, field=key)
        cid = item["id"]
        if cid in seen:
            raise InputError(f"duplicate criterion id {cid!r}", path=source, row=k, field="id")
        seen.add(cid)
        if cid != f"C{k}":
            raise InputError(f"criterion id {cid!r} should be 'C{k}' (ids are C1..CK in order, "
                             "the verdict table's columns)", path=source, row=k, field="id")
        criteria.append(Criterion(cid, item["name"].strip(), item["question"].strip()))
    return Rubric(tuple(criteria), source)


@dataclass(frozen=True)
class Prompts:
    """The two templates (text and sha256), the rubric and how answers are constrained."""

    stage_a: str
    stage_b: str
    rubric: Rubric
    sha256_a: str
    sha256_b: str
    response_format: str = "json_schema"
    score_values: str = "bounded"

    def identity(self) -> dict:
        return {"prompt_a_sha256": self.sha256_a, "prompt_b_sha256": self.sha256_b,
                "rubric_sha256": self.rubric.sha256, "criteria": self.rubric.ids,
                "response_format": self.response_format, "score_values": self.score_values}

    def render_a(self, query: str, passages: list[str]) -> str:
        return self._template_a.fill(query=query, n=len(passages),
                                     passages=format_passages(passages))

    def render_b(self, query: str, passages: list[str]) -> str:
        return self._template_b.fill(query=query, n=len(passages),
                                     passages=format_passages(passages))

    @cached_property
    def _template_a(self) -> _Filled:
        return _Filled.compile(self.stage_a, ("query", "n", "passages"), {})

    @cached_property
    def _template_b(self) -> _Filled:
        crit = "\n".join(f"{c.id} ({c.name}): {c.question}" for c in self.rubric.criteria)
        return _Filled.compile(self.stage_b, ("query", "n", "passages"),
                               {"criteria": crit, "ids": ", ".join(self.rubric.ids)})

    def schema_a(self, w: int) -> dict:
        item = ({"type": "number", "minimum": -5, "maximum": 5}
                if self.score_values == "bounded" else {"enum": list(range(-5, 6))})
        keys = [str(i + 1) for i in range(w)]
        return {"type": "object", "properties": {k: item for k in keys}, "required": keys,
                "additionalProperties": False}

    def schema_b(self, w: int) -> dict:
        ids = self.rubric.ids
        inner = {"type": "object", "properties": {c: {"type": "boolean"} for c in ids},
                 "required": ids, "additionalProperties": False}
        keys = [str(i + 1) for i in range(w)]
        return {"type": "object", "properties": {k: inner for k in keys}, "required": keys,
                "additionalProperties": False}

    def longest_answer(self, stage: str, w: int) -> str:
        """The longest valid answer of a window of ``w``: what its output cap must hold
        (every score ``-4.5``, every verdict ``false``, indented as models often write it)."""
        if stage == "A":
            value: object = {str(i + 1): -4.5 for i in range(w)}
        else:
            value = {str(i + 1): dict.fromkeys(self.rubric.ids, False) for i in range(w)}
        return json.dumps(value, indent=1)

    def response_format_for(self, stage: str, w: int) -> dict | None:
        schema = self.schema_a(w) if stage == "A" else self.schema_b(w)
        if self.response_format == "json_schema":
            return {"type": "json_schema", "json_schema": {
                "name": f"stage_{stage.lower()}_answer", "schema": schema, "strict": True}}
        if self.response_format == "json_object":
            return {"type": "json_object", "schema": schema}
        return None


@dataclass(frozen=True)
class _Filled:
    """A template read once: what ``Template.safe_substitute`` gives, as literal pieces with
    the per-window fields between them (a window's prompt is then one join)."""

    pieces: tuple[str, ...]  # literal, field, literal, field, ..., literal
    fields: tuple[str, ...]

    @classmethod
    def compile(cls, text: str, fields: tuple[str, ...], fixed: dict[str, str]) -> _Filled:
        marker = "\x00"
        while marker in text or any(marker in v for v in fixed.values()):
            marker += "\x00"
        # a field becomes a marker; a value, an escape, an unknown name, as safe_substitute
        out = Template(text).safe_substitute(
            {f: f"{marker}{k}{marker}" for k, f in enumerate(fields)} | fixed)
        parts = out.split(marker)
        pieces, order = [parts[0]], []
        for k in range(1, len(parts), 2):
            order.append(fields[int(parts[k])])
            pieces.append(parts[k + 1])
        return cls(tuple(pieces), tuple(order))

    def fill(self, **values: object) -> str:
        out = [self.pieces[0]]
        for name, piece in zip(self.fields, self.pieces[1:], strict=True):
            out.append(str(values[name]))
            out.append(piece)
        return "".join(out)


def format_passages(passages: list[str]) -> str:
    return "\n\n".join(f"[{i + 1}] {text}" for i, text in enumerate(passages))


def load_prompts(stage_a: str | Path | None = None, stage_b: str | Path | None = None,
                 rubric: str | Path | None = None, *, response_format: str = "json_schema",
                 score_values: str = "bounded") -> Prompts:
    """The shipped templates and rubric, or the files given."""
    def read(path, name):
        if path is None:
            return _package_text(name)
        try:
            return Path(path).read_bytes()
        except FileNotFoundError as exc:
            raise InputError("prompt template not found", path=str(path)) from exc

    a, b = read(stage_a, "stage_a.txt"), read(stage_b, "stage_b.txt")
    for data, path, need in ((a, stage_a, ("$passages", "$query")),
                             (b, stage_b, ("$passages", "$query", "$criteria"))):
        text = data.decode("utf-8")
        for token in need:
            if token not in text:
                raise InputError(f"the template has no {token} placeholder",
                                 path=str(path or "built-in"))
    return Prompts(a.decode("utf-8"), b.decode("utf-8"), load_rubric(rubric),
                   sha256_bytes(a), sha256_bytes(b), response_format, score_values)
