"""Every input of a build, checked before anything is written.

One module for every suite. :func:`validate_source` checks what a suite's reader returned (the
reader contract, :mod:`rcp_data.sources.base`) against the suite's spec; :func:`validate_inputs`
checks the builder inputs (``judge/``, ``first_stage/``, ``runs/``; docs/concepts, "Builder
inputs"). Each problem is an :class:`~rcp_data.core.errors.InputError` naming the file (or the
upstream dataset), the 1-based row and the field:

- ids: present and non-empty; query and document ids unique; (query, document) pairs once per
  table (qrels, thetas, each run; verdicts once per window, i.e. per ``call_index``);
- texts: query texts and document texts non-blank (documents: unless the spec allows empty
  documents for the subset, ``[source] allow_empty_documents``);
- grades: integers within the spec's ``[source] grades``; qrels name known queries and documents;
- exclusions: one list per query of distinct, known document ids (a string is not a list);
- numbers: thetas, first-stage and run scores are numbers and finite (``theta_bt`` may be null);
- the judge's short name is a file-name token; every retriever the spec fuses has a run (BM25
  may be computed); at least one reranker run.

Checks that need the pools (a run scores every pool document, thetas and verdicts name pool
documents only) follow while the release is assembled in its temporary folder, still before
it is moved into place (:mod:`rcp_data.building.build`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError, SchemaError, shown
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.schemas import criteria_columns
from rcp_data.runs.run_files import SPLIT_COLUMN
from rcp_data.sources.base import CorpusReader, SubsetSource, SuiteSource

if TYPE_CHECKING:
    from rcp_data.building.input_records import BuildInputs

SPLIT = "split"
COMPUTED_RETRIEVERS = frozenset({"bm25"})   # the build computes these when no run is given
SHORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


# -- helpers -------------------------------------------------------------------------------------
def file_row(frame: pd.DataFrame, i: int) -> int:
    """The 1-based row (or line) in its file of position ``i`` of a table as read."""
    if "_line" in frame.columns:
        return int(frame["_line"].iloc[i])
    label = frame.index[i]
    return int(label) + 1 if isinstance(label, int | np.integer) else i + 1


def _py(value: object) -> object:
    """A cell as a plain Python value (so that messages show ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _first(mask: np.ndarray | pd.Series) -> int | None:
    hits = np.flatnonzero(np.asarray(mask, dtype=bool))
    return int(hits[0]) if hits.size else None


def _require(frame: pd.DataFrame, columns: Sequence[str], path: str) -> None:
    for col in columns:
        if col not in frame.columns:
            raise SchemaError(f"missing column {col!r} (has {', '.join(map(str, frame.columns))})",
                              path=path, field=col)


def _is_text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def check_ids(frame: pd.DataFrame, columns: Sequence[str], path: str) -> None:
    """Every id of ``columns`` is a non-empty string."""
    for col in columns:
        bad = _first(~frame[col].map(_is_text))
        if bad is not None:
            raise InputError(f"{_py(frame[col].iloc[bad])!r} is not an id (ids are non-empty text)",
                             path=path, row=file_row(frame, bad), field=col)


def check_numbers(frame: pd.DataFrame, col: str, path: str, *, nulls: bool = False) -> None:
    """Column ``col`` holds numbers (not text or booleans), each finite (null only if
    ``nulls``)."""
    values = frame[col]
    if len(values) and values.isna().all():   # an all-null column reads back untyped
        if nulls:
            return
        raise InputError(f"{col} null is not a finite number", path=path,
                         row=file_row(frame, 0), field=col)
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        kinds = sorted({type(v).__name__ for v in values.head(1000)})
        raise SchemaError(f"column {col!r} holds {'/'.join(kinds) or values.dtype} values, "
                          "expected numbers", path=path, field=col)
    numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~np.isfinite(numbers)
    if nulls:
        bad &= ~np.isnan(numbers)
    i = _first(bad)
    if i is not None:
        value = values.iloc[i]
        shown = "null" if value is None or value is pd.NA else repr(float(value))
        raise InputError(f"{col} {shown} is not a finite number", path=path,
                         row=file_row(frame, i), field=col)


def check_unique(frame: pd.DataFrame, key: Sequence[str], path: str, what: str) -> None:
    """No two rows share ``key``; the error says whether they also disagree elsewhere."""
    key = [SPLIT, *key] if SPLIT in frame.columns and SPLIT not in key else list(key)
    dup = frame.duplicated(key, keep="first").to_numpy()
    i = _first(dup)
    if i is None:
        return
    same = np.ones(len(frame), dtype=bool)
    for col in key:
        same &= (frame[col] == frame[col].iloc[i]).to_numpy()
    j = int(np.flatnonzero(same)[0])
    others = [c for c in frame.columns if c not in key and c != "_line"]
    differ = [c for c in others if not _same(frame[c].iloc[i], frame[c].iloc[j])]
    ident = ", ".join(f"{_LABELS.get(c, c)} {_py(frame[c].iloc[i])!r}" for c in key)
    how = f", disagreeing on {', '.join(differ)}" if differ else ""
    joiner = " " if key == ["id"] else " for "
    raise InputError(f"duplicate {what}{joiner}{ident} (rows {file_row(frame, j)} and "
                     f"{file_row(frame, i)}{how})", path=path, row=file_row(frame, i))


_LABELS = {"query-id": "query", "corpus-id": "document", "id": "id"}


def _same(a: object, b: object) -> bool:
    """Whether two cells hold the same value (nulls equal; lists element by element)."""
    if isinstance(a, list | tuple | np.ndarray) or isinstance(b, list | tuple | np.ndarray):
        return isinstance(a, list | tuple | np.ndarray) and isinstance(
            b, list | tuple | np.ndarray) and list(a) == list(b)
    if pd.isna(a) and pd.isna(b):
        return True
    return bool(a == b)


# -- source tables (the reader contract) ---------------------------------------------------------
def validate_source(spec: SuiteSpec, source: SuiteSource, subsets: Sequence[str]) -> None:
    """Check the named subsets of a reader's :class:`SuiteSource` (see the module docstring)."""
    checked: set[int] = set()
    for name in subsets:
        sub = source.subsets[name]
        if id(sub.corpus) not in checked:  # a shared corpus is checked once
            check_corpus(sub.corpus, allow_empty=spec.allows_empty_documents(name))
            checked.add(id(sub.corpus))
        queries = check_queries(sub)
        check_qrels(sub, queries, spec.grades)
        check_excluded(sub, queries)


def check_corpus(corpus: CorpusReader, *, allow_empty: bool) -> None:
    """Unique, present ids; non-blank texts unless ``allow_empty``; the declared size."""
    facts = corpus.facts()
    if facts.missing_id_row is not None:
        raise InputError("a document has no id", path=facts.source, row=facts.missing_id_row,
                         field="id")
    if facts.repeated is not None:
        row, doc = facts.repeated
        raise InputError(f"document id {doc!r} appears twice", path=facts.source, row=row,
                         field="id")
    if facts.empty_ids and not allow_empty:
        raise InputError(f"document {facts.empty_ids[0]!r} has empty text ({len(facts.empty_ids)}"
                         " empty in all); empty documents are an error unless the suite's spec "
                         "allows them ([source] allow_empty_documents)", path=facts.source,
                         row=facts.first_empty_row, field="text")
    if corpus.size is not None and corpus.size != facts.documents:
        raise InputError(f"the reader declared {corpus.size:,} documents but the corpus holds "
                         f"{facts.documents:,}", path=facts.source)


def check_queries(sub: SubsetSource) -> set[str]:
    """Queries with unique ids and non-blank text; returns the ids."""
    path = sub.origin("queries")
    q = sub.queries.reset_index(drop=True)
    _require(q, ["id", "text"], path)
    check_ids(q, ["id"], path)
    check_unique(q, ["id"], path, "query")
    blank = _first(~q["text"].map(_is_text))
    if blank is not None:
        raise InputError(f"query {q['id'].iloc[blank]!r} has empty text", path=path,
                         row=blank + 1, field="text")
    return set(q["id"])


def check_qrels(sub: SubsetSource, queries: set[str], grades: tuple[int, int]) -> None:
    """Known queries and documents, each pair once, integer grades within ``grades``."""
    path = sub.origin("qrels")
    q = sub.qrels.reset_index(drop=True)
    _require(q, ["query-id", "corpus-id", "score"], path)
    check_ids(q, ["query-id", "corpus-id"], path)
    unknown = _first(~q["query-id"].isin(queries))
    if unknown is not None:
        raise InputError(f"qrel names query {q['query-id'].iloc[unknown]!r}, which is not a "
                         "query of the subset", path=path, row=unknown + 1, field="query-id")
    known = sub.corpus.known(q["corpus-id"]) if len(q) else np.ones(0, dtype=bool)
    unknown = _first(~known)
    if unknown is not None:
        raise InputError(f"qrel names document {q['corpus-id'].iloc[unknown]!r}, which is not "
                         "in the corpus", path=path, row=unknown + 1, field="corpus-id")
    score = q["score"]
    numeric = pd.api.types.is_numeric_dtype(score) and not pd.api.types.is_bool_dtype(score)
    values = (score.to_numpy(dtype=np.float64, na_value=np.nan) if numeric
              else np.full(len(q), np.nan))
    lo, hi = grades
    bad = _first(~np.isfinite(values) | (values != np.round(values)) | (values < lo)
                 | (values > hi))
    if bad is not None:
        raise InputError(f"grade {_py(score.iloc[bad])!r} is not an integer in {lo}..{hi} (the "
                         "suite's [source] grades)", path=path, row=bad + 1, field="score")
    check_unique(q, ["query-id", "corpus-id"], path, "qrel")


def check_excluded(sub: SubsetSource, queries: set[str]) -> None:
    """One row per query: a list of distinct, known document ids."""
    if sub.excluded is None:
        return
    path = sub.origin("excluded")
    ex = sub.excluded.reset_index(drop=True)
    _require(ex, ["query-id", "excluded-corpus-ids"], path)
    check_ids(ex, ["query-id"], path)
    check_unique(ex, ["query-id"], path, "exclusion list")
    field = "excluded-corpus-ids"
    flat: list[tuple[int, str]] = []
    for i, (qid, ids) in enumerate(zip(ex["query-id"], ex[field], strict=True)):
        if qid not in queries:
            raise InputError(f"excludes documents for {qid!r}, which is not a query of the "
                             "subset", path=path, row=i + 1, field="query-id")
        if isinstance(ids, str | bytes) or not isinstance(ids, list | tuple | np.ndarray):
            raise InputError(f"{ids!r} is not a list of document ids (query {qid!r})",
                             path=path, row=i + 1, field=field)
        ids = list(ids)
        if not all(_is_text(d) for d in ids):
            raise InputError(f"{ids!r} holds a value that is not a document id (query "
                             f"{qid!r})", path=path, row=i + 1, field=field)
        if len(set(ids)) != len(ids):
            rep = next(d for d in ids if ids.count(d) > 1)
            raise InputError(f"query {qid!r} excludes document {rep!r} twice", path=path,
                             row=i + 1, field=field)
        flat += [(i, d) for d in ids]
    if not flat:
        return
    known = sub.corpus.known([d for _, d in flat])
    bad = _first(~known)
    if bad is not None:
        i, doc = flat[bad]
        raise InputError(f"excluded document {doc!r} of query {ex['query-id'].iloc[i]!r} is "
                         "not in the corpus", path=path, row=i + 1, field=field)


# -- builder inputs ------------------------------------------------------------------------------
def check_verdicts(criteria: pd.DataFrame, params: ItemParams, *, source: str) -> pd.DataFrame:
    """Validate the verdict table against the item parameters; return it in layout order."""
    for col in ("query-id", "call_index", "corpus-id"):
        if col not in criteria.columns:
            raise InputError(f"missing column {col!r}", path=source, field=col)
    crit = criteria_columns(list(criteria.columns))
    if crit != params.criteria:
        raise InputError(
            f"the verdict table has criteria {crit} but the item parameters have "
            f"{params.n_criteria} ({params.criteria}); they must match", path=source)
    frame = criteria.copy()
    if "finish_reason" not in frame.columns:
        frame["finish_reason"] = "stop"
    for c in crit:
        vals = frame[c]
        ok = vals.isna() | vals.isin([0, 1])
        if not ok.all():
            i = int(np.flatnonzero(~ok.to_numpy())[0])
            raise InputError(f"verdict {shown(vals.iloc[i])} is not 0 or 1", path=source, row=i + 1,
                             field=c)
    extra = [SPLIT_COLUMN] if SPLIT_COLUMN in frame.columns else []
    return frame[["query-id", "call_index", "corpus-id", *crit, "finish_reason", *extra]]


def validate_inputs(spec: SuiteSpec, inputs: BuildInputs) -> None:
    """Check the builder inputs (see the module docstring)."""
    root = inputs.root or Path("inputs")
    judge_json = str(root / "judge" / "judge.json")
    for key in ("model", "short"):
        value = getattr(inputs.judge, key)
        if not _is_text(value):
            raise InputError(f"{key} {value!r} is not a name", path=judge_json, field=key)
    if not SHORT_NAME.match(inputs.judge.short):
        raise InputError(f"short name {inputs.judge.short!r} may hold only letters, digits, "
                         "'.', '_' and '-' (it names provenance/item_params.<short>.json)",
                         path=judge_json, field="short")
    check_thetas(inputs.thetas, str(root / "judge" / "thetas.parquet"))
    check_criteria(inputs.criteria, str(root / "judge" / "criteria.parquet"))
    check_first_stage(spec, inputs.first_stage, root / "first_stage")
    runs_json = str(root / "runs" / "runs.json")
    if not any(not run.is_judge for run, _ in inputs.runs):
        raise InputError("no reranker run: a release needs at least one (judge strategies "
                         "alone do not make one)", path=runs_json)
    for run, frame in inputs.runs:
        check_run(frame, str(root / "runs" / run.file))


def check_thetas(thetas: pd.DataFrame, path: str) -> None:
    _require(thetas, ["query-id", "corpus-id", "theta"], path)
    check_ids(thetas, ["query-id", "corpus-id"], path)
    check_numbers(thetas, "theta", path)
    if "theta_bt" in thetas.columns:
        check_numbers(thetas, "theta_bt", path, nulls=True)
    check_unique(thetas, ["query-id", "corpus-id"], path, "theta")


def check_criteria(criteria: pd.DataFrame, path: str) -> None:
    _require(criteria, ["query-id", "call_index", "corpus-id"], path)
    check_ids(criteria, ["query-id", "corpus-id"], path)
    call = criteria["call_index"]
    if not pd.api.types.is_integer_dtype(call):
        raise SchemaError(f"column 'call_index' has type {call.dtype}, expected integers",
                          path=path, field="call_index")
    check_unique(criteria, ["query-id", "call_index", "corpus-id"], path, "verdict")


def check_first_stage(spec: SuiteSpec, runs: dict[str, pd.DataFrame], folder: Path) -> None:
    expected = list(spec.pool.retrievers)
    unknown = sorted(set(runs) - set(expected))
    if unknown:
        path = runs[unknown[0]].attrs.get("source", str(folder / unknown[0]))
        raise InputError(f"{unknown[0]!r} is not a first-stage retriever of suite "
                         f"{spec.name!r} (expected {', '.join(expected)})", path=path)
    lacking = [r for r in expected if r not in runs and r not in COMPUTED_RETRIEVERS
               and r not in spec.pool.dense]
    if lacking and spec.fixed_candidates:
        raise InputError(f"no candidate lists: the pools of suite {spec.name!r} are its "
                         f"candidate lists ([pool] rule = \"candidates\"); give them as "
                         f"{lacking[0]}.trec or {lacking[0]}.parquet (query-id, corpus-id, "
                         "score or rank)", path=str(folder))
    if lacking:
        found = f"found {', '.join(sorted(runs))}" if runs else "the folder holds no run"
        raise InputError(f"no first-stage run of {', '.join(lacking)} ({found}; expected "
                         f"<retriever>.trec or .parquet for {', '.join(expected)}, "
                         f"{'/'.join(sorted(COMPUTED_RETRIEVERS))} computed when absent)",
                         path=str(folder))
    for name, frame in runs.items():
        check_run(frame, frame.attrs.get("source", str(folder / name)))


def check_run(frame: pd.DataFrame, path: str) -> None:
    """A first-stage or reranker run: ids, finite scores, integer ranks >= 1, pairs once."""
    _require(frame, ["query-id", "corpus-id", "score"], path)
    check_ids(frame, ["query-id", "corpus-id"], path)
    check_numbers(frame, "score", path)
    if "rank" in frame.columns:
        check_numbers(frame, "rank", path)
        rank = frame["rank"].to_numpy(dtype=np.float64)
        bad = _first((rank < 1) | (rank != np.floor(rank)))
        if bad is not None:
            raise InputError(f"rank {_py(frame['rank'].iloc[bad])!r} is not an integer >= 1 (ranks "
                             "count from 1)", path=path, row=file_row(frame, bad), field="rank")
    check_unique(frame, ["query-id", "corpus-id"], path, "line")


def validate_build(spec: SuiteSpec, source: SuiteSource, inputs: BuildInputs,
                   subsets: Sequence[str]) -> None:
    """Everything :mod:`rcp_data.building.build` reads, checked before it writes anything."""
    spec.grades  # noqa: B018 - a spec without a grade range cannot be built
    validate_inputs(spec, inputs)
    validate_source(spec, source, subsets)


__all__ = ["check_corpus", "check_criteria", "check_excluded", "check_first_stage",
           "check_ids", "check_numbers", "check_qrels", "check_queries", "check_run",
           "check_thetas", "check_unique", "file_row", "validate_build", "validate_inputs",
           "validate_source"]
