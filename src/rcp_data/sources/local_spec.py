"""The spec of a benchmark of one's own, written from what its data folder holds.

:func:`spec_text` turns :func:`~rcp_data.sources.local_files.inspect_folder`'s findings and the
user's answers (:class:`SpecAnswers`) into a suite spec (TOML) that
:func:`rcp_data.core.specs.load_spec_file` reads back. What is not given is left as a TODO
marker (``"TODO: ..."``): the spec loads and builds with ``--no-prepare``, but a build refuses to
prepare a release for publishing until every marker is filled in
(:func:`rcp_data.core.specs.check_no_todo`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import (
    CANDIDATES,
    DEFAULT_CARD_K,
    JUDGE_PRESETS,
    TIE_RULES,
    TODO,
    dense_name,
)
from rcp_data.sources.local_files import READER, Found

DEFAULT_POOL_SIZE = 150


@dataclass(frozen=True)
class SpecAnswers:
    """What ``suite init`` asks; None (or empty): left as a TODO marker, or the default."""

    grade_positive: int | None = None   # required
    tie_rule: str = "doc-id"            # trec_eval's convention
    judge_preset: str = "full"
    pool_size: int = DEFAULT_POOL_SIZE
    license: str | None = None
    citation: str | None = None         # a BibTeX entry
    description: str | None = None
    links: tuple[str, ...] = ()
    repo: str | None = None
    dense: tuple[str, ...] = ()         # [KEY=]MODEL: sentence-transformers (paths or Hub ids)
    language: str = "en"
    synthetic: bool = False
    candidates: bool = False            # the pools are the benchmark's fixed candidate lists
    card_k: tuple[int, ...] = DEFAULT_CARD_K   # the card's cutoffs, the first its main k


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)   # a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", name) if p)


def retriever_order(dense: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """The fused retrievers in the paper's order (a dense one, BM25, the other dense ones)
    and the dense models by retriever key."""
    models = {}
    for item in dense:
        key = dense_name(item)
        model = item.split("=", 1)[1] if "=" in item else item
        if key in models:
            raise UsageError(f"two dense models get the retriever name {key!r}")
        models[key] = model
    keys = list(models)
    return keys[:1] + ["bm25"] + keys[1:], models


def _todo(value: str | None, what: str) -> str:
    return value if value else f"{TODO}: {what}"


def spec_text(name: str, found: Found, answers: SpecAnswers, spec_path: Path) -> str:
    """The TOML of suite ``name`` for the data ``found``, written to ``spec_path``."""
    a = answers
    if a.tie_rule not in TIE_RULES:
        raise UsageError(f"unknown tie rule {a.tie_rule!r}; choose one of {', '.join(TIE_RULES)}")
    if a.judge_preset not in JUDGE_PRESETS:
        raise UsageError(f"unknown judge preset {a.judge_preset!r}; choose one of "
                         f"{', '.join(JUDGE_PRESETS)}")
    if a.pool_size < 1:
        raise UsageError(f"the pool size must be at least 1, got {a.pool_size}")
    if not a.card_k or min(a.card_k) < 1 or len(set(a.card_k)) != len(a.card_k):
        raise UsageError("the card's cutoffs must be positive integers, none twice, got "
                         f"{list(a.card_k)}")
    lo, hi = found.grades
    positive = a.grade_positive
    if positive is None:
        raise UsageError("which grade is positive? give --grade-positive N (the lowest grade "
                         f"that is a positive label; the data's grades are {lo}..{hi})")
    if not 1 <= positive <= hi:
        raise UsageError(f"the positive grade must be in 1..{hi} (the data's grades are "
                         f"{lo}..{hi}), got {positive}")
    if a.candidates and a.dense:
        raise UsageError("the pools are the candidate lists (--candidates): no dense first "
                         "stage runs; drop --dense")
    retrievers, dense = retriever_order(a.dense)
    try:
        data = os.path.relpath(found.root.resolve(), os.path.realpath(spec_path.parent))
    except ValueError:   # another drive
        data = str(found.root.resolve())
    short = _camel(name)
    counts = ", ".join(f"{g}: {n}" for g, n in found.grade_counts.items())
    lines = [
        f"# Suite {name!r}: written by `rcp-data suite init` from {found.root}.",
        f"# {len(found.subsets)} subset(s), format {found.format}; qrels grades {lo}..{hi} "
        f"(counts {counts}).",
        "# Fill in every TODO marker: `rcp-data build` refuses to prepare a release while one "
        "is left.",
        "[suite]",
        f"name = {_toml(name)}",
        f"pretty_name = {_toml(f'RCP-nDCG {name}' + (' (SYNTHETIC data)' if a.synthetic else ''))}",
        f"title = {_toml(name)}",
        f"repo = {_toml(_todo(a.repo, 'the Hub dataset repo OWNER/NAME'))}",
        f"split = {_toml('test')}",
        f"paper_tie_rule = {_toml(a.tie_rule)}",
        f"synthetic = {_toml(a.synthetic)}",
        f"license = {_toml(_todo(a.license, 'the licence of the data (an SPDX id, e.g. cc-by-4.0)'))}",
        f"languages = {_toml([a.language])}",
        'task_categories = ["text-retrieval"]',
        'modalities = ["text"]',
        'task_versioning = "suffix"',
        'mteb_floor = "2.0.1"',
        f"card_k = {_toml(list(a.card_k))}   # the card's cutoffs; the first is its main score",
        "",
        "[judge]",
        f"preset = {_toml(a.judge_preset)}",
        "",
        "[pool]",
        *(['rule = "candidates"   # the pools are the candidate lists, whole: nothing computed '
           'or added',
           f"size = {a.pool_size}   # not used: a candidate list is never cut",
           f"retrievers = {_toml([CANDIDATES])}   # the lists: "
           f"<inputs>/first_stage/{CANDIDATES}.trec or .parquet"]
          if a.candidates else
          ['rule = "top-k-inject"',
           f"size = {a.pool_size}",
           f"retrievers = {_toml(retrievers)}   # fused by RRF in this order"]),
        "rrf_k = 60",
        "",
    ]
    if dense:
        lines += ["[pool.dense]   # computed by the build when no run is given"]
        lines += [f"{key} = {_toml(model)}" for key, model in dense.items()] + [""]
    lines += [
        "[corpus]",
        'layout = "per-subset"',
        'provenance_split = "subset"',
        "",
        "[source]",
        f"read = {_toml(READER)}",
        f"reader = {_toml(f'local files ({found.format})')}",
        *([] if found.format == "irds" else
          [f"path = {_toml(data)}   # the data folder, relative to this file"]),
        f"format = {_toml(found.format)}",
        *([f"subset_column = {_toml(found.subset_column)}"] if found.subset_column else []),
        *([f"table = {_toml(found.table)}   # the file of (query, document, grade) rows",
           f"columns = {_toml(dict(found.columns))}",
           f"grade_map = {_toml(dict(found.grade_map))}"] if found.format == "table" else []),
        f"grades = {_toml([lo, hi])}",
        f"grade_positive = {positive}   # the lowest grade that is a positive label",
        "",
        "[card]",
        f"description = {_toml(_todo(a.description, 'what the benchmark is, in a paragraph'))}",
        f"citation = {_toml(_todo(a.citation, 'a BibTeX entry of the benchmark'))}",
        f"links = {_toml(list(a.links) or [f'{TODO}: the source links of the data'])}",
        "",
    ]
    for sub in found.subsets:
        lines += [
            "[[subsets]]",
            f"name = {_toml(sub.name)}",
            f"label = {_toml(sub.name)}",
            f"task = {_toml(short + _camel(sub.name))}",
            f"source = {_toml(sub.source)}",
            f"upstream = {{ queries = {sub.queries} }}",
            "",
        ]
    return "\n".join(lines)


def open_todos(text: str) -> list[str]:
    """The TODO markers of a spec's text, one per line holding one (comments included)."""
    return [ln.strip() for ln in text.splitlines() if TODO in ln]


__all__ = ["SpecAnswers", "open_todos", "retriever_order", "spec_text"]


@dataclass(frozen=True)
class InitResult:
    """What :func:`init_suite` wrote: the spec file, what it found, the TODO markers left."""

    path: Path
    found: Found
    todos: tuple[str, ...]
    text: str = ""           # the spec's TOML (what ``out`` "-" prints)


def init_suite(name: str, data: Path | str, out: Path, answers: SpecAnswers, *,
               fmt: str | None = None, subset_column: str = "", split: str = "test",
               force: bool = False, columns: dict[str, str] | None = None,
               grade_map: dict[str, int] | None = None) -> InitResult:
    """Inspect ``data`` (a folder, or ``irds:ID[,ID...]``) and write the spec of suite ``name``
    to ``out`` (new, or ``force``; ``"-"``: no file, the text in the result, its data paths
    relative to the working folder);
    the spec is read back (every key checked) before the file is put in place."""
    from rcp_data.core.specs import load_spec_file
    from rcp_data.sources.local_files import IRDS, inspect_folder, inspect_irds, subset_name

    if subset_name(name) != name:
        raise UsageError(f"a suite name holds lower-case letters, digits and '_' only, e.g. "
                         f"{subset_name(name)!r}")
    to_stdout = str(out) == "-"
    out = Path(f"{name}.toml") if to_stdout else Path(out)
    if out.exists() and not force and not to_stdout:
        raise UsageError(f"{out} exists; give --force to replace it")
    if str(data).startswith(IRDS):
        found = inspect_irds([i for i in str(data)[len(IRDS):].split(",") if i])
    else:
        found = inspect_folder(Path(data), fmt=fmt, split=split, subset_column=subset_column,
                               columns=columns, grade_map=grade_map)
    dense = tuple(f"{m.split('=', 1)[0]}={Path(m.split('=', 1)[1]).resolve()}"
                  if "=" in m and Path(m.split("=", 1)[1]).is_dir()
                  else str(Path(m).resolve()) if Path(m).is_dir() else m for m in answers.dense)
    text = spec_text(name, found, replace(answers, dense=dense), out)
    if to_stdout:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            check = Path(folder) / out.name
            check.write_text(text, encoding="utf-8")
            spec = load_spec_file(check)
        return InitResult(Path("-"), found, spec.todo, text)
    from rcp_data.core.io import atomic_path

    # read back before it is put in place; a symbolic link at ``out`` is replaced, never
    # written through
    with atomic_path(out, suffix=".toml") as tmp:
        tmp.write_text(text, encoding="utf-8")
        spec = load_spec_file(tmp)
    return InitResult(out, found, spec.todo, text)


__all__ += ["InitResult", "init_suite"]
