"""A benchmark of one's own, read from local files (``[source] read = "local"``).

One reader for every spec outside the package. ``[source] path`` is the data folder (relative to
the spec file), ``[source] format`` its format:

- ``beir``: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``)
  and ``qrels/<split>.tsv`` (``query-id``, ``corpus-id``, ``score``; a header line is optional);
- ``trec``: topics ``topics.tsv`` (``id<TAB>text``) or ``topics.txt`` (``<top><num>``, ``<title>``),
  qrels ``qrels.txt`` (``query-id iteration corpus-id grade``) and a corpus ``corpus.tsv``
  (``id<TAB>text`` or ``id<TAB>title<TAB>text``) or ``corpus.jsonl``;
- ``csv``: ``corpus.csv`` (``id``, ``text``, optional ``title``), ``queries.csv`` (``id``, ``text``)
  and ``qrels.csv`` (``query-id``, ``corpus-id``, ``score``), each with a header;
- ``table``: one CSV / TSV / JSON-lines / parquet file of (query, document, grade) rows
  (``[source] table``, ``columns``, ``grade_map``; :mod:`rcp_data.sources.local_table`);
- ``irds``: no folder; each subset's ``source`` is an ir_datasets id (docs, queries, qrels).

A subset is a sub-folder (``[[subsets]] source`` names it; empty: the data folder itself) or,
with ``[source] subset_column``, one value of that column in every table of the data folder.

Every problem is one :class:`~rcp_data.core.errors.InputError` naming the file, its line (the
1-based line of the file, a header counting as line 1) and the field: a line that does not
parse, a missing or empty id or text, a document or query id given twice, a qrel naming an
unknown query or document, a grade that is not an integer within ``[source] grades``.
:func:`inspect_folder` finds the format, the subsets and the grade scale of a folder
(``rcp-data suite init``).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd
import pyarrow as pa

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.io import open_text, read_text
from rcp_data.core.specs import SuiteSpec
from rcp_data.sources import local_table
from rcp_data.sources.base import CorpusFacts, CorpusReader, SubsetSource, SuiteSource

FORMATS = ("beir", "trec", "csv", "table", "irds")
IRDS = "irds:"   # ``suite init --from irds:ID[,ID...]``: ir_datasets ids, one subset each
READER = "local"   # the name of this reader in rcp_data.sources.registry


@dataclass(frozen=True)
class Record:
    """One row of an input file: its 1-based line and its fields."""

    line: int
    fields: dict[str, str]


@dataclass(frozen=True)
class Table:
    """The rows of one input file (``path``), in file order."""

    path: Path
    rows: tuple[Record, ...]

    def only(self, column: str, value: str) -> Table:
        return Table(self.path, tuple(r for r in self.rows if r.fields.get(column) == value))


# -- files ---------------------------------------------------------------------------------------
def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return str(value)


def read_jsonl(path: Path, keys: dict[str, tuple[str, ...]]) -> Table:
    """A JSON-lines file; ``keys``: field -> the JSON keys it may come from (first found)."""
    rows = []
    with _open(path) as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", path=str(path),
                                 row=line_no) from exc
            except RecursionError:  # nested deeper than Python's stack
                raise InputError("JSON nested too deep to read", path=str(path),
                                 row=line_no) from None
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object", path=str(path), row=line_no)
            fields = {}
            for name, names in keys.items():
                hit = next((k for k in names if k in obj), None)
                fields[name] = _text(obj.get(hit)) if hit else ""
            for extra, value in obj.items():
                if extra not in fields and isinstance(value, str):
                    fields.setdefault(extra, value)
            rows.append(Record(line_no, fields))
    return Table(path, tuple(rows))


def read_delimited(path: Path, columns: tuple[str, ...], *, delimiter: str,
                   header: bool | None = None, whitespace: bool = False) -> Table:
    """A CSV / TSV file. ``header``: True (required), False (none) or None (when the first
    cell names a column). ``whitespace``: fields split on runs of blanks (TREC qrels). A
    ``title`` column is optional: without a header, ``id<TAB>text`` lines have none."""
    rows = []
    required = [c for c in columns if c != "title"]
    with _open(path) as fh:
        lines = (ln.split() for ln in fh) if whitespace else csv.reader(
            fh, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if delimiter == "," else
            csv.QUOTE_NONE)
        names: list[str] | None = None
        for line_no, cells in enumerate(lines, 1):
            if not cells or not any(c.strip() for c in cells):
                continue
            if line_no == 1 and (header or (header is None and cells[0].strip() in (
                    *columns, "query_id", "qid", "_id"))):
                names = [c.strip() for c in cells]
                if header:
                    lacking = [c for c in required if c not in names]
                    if lacking:
                        raise InputError(f"the header lacks column {lacking[0]!r} (has "
                                         f"{', '.join(names)})", path=str(path), row=1,
                                         field=lacking[0])
                else:
                    names = list(columns)   # a header of the expected columns, in order
                continue
            if names is not None and header:
                if len(cells) != len(names):
                    raise InputError(f"expected {len(names)} fields ({', '.join(names)}), got "
                                     f"{len(cells)}", path=str(path), row=line_no)
                rows.append(Record(line_no, dict(zip(names, cells, strict=True))))
                continue
            if len(cells) == len(required) and len(required) < len(columns):
                cells = [cells[0], "", *cells[1:]]   # id<TAB>text: no title
            if len(cells) != len(columns):
                raise InputError(f"expected {len(columns)} fields ({', '.join(columns)}), got "
                                 f"{len(cells)}", path=str(path), row=line_no)
            rows.append(Record(line_no, dict(zip(columns, cells, strict=True))))
    return Table(path, tuple(rows))


def read_trec_topics(path: Path) -> Table:
    """TREC topics: ``<top> <num> Number: 301 <title> text ... </top>`` blocks."""
    text = read_text(path)
    rows = []
    for match in re.finditer(r"<top>(.*?)</top>", text, flags=re.S):
        block = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        num = re.search(r"<num>\s*(?:Number:)?\s*(\S+)", block)
        title = re.search(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=<|$)", block, flags=re.S)
        if num is None:
            raise InputError("a <top> block has no <num>", path=str(path), row=line, field="num")
        rows.append(Record(line, {"id": num.group(1),
                                  "text": " ".join((title.group(1) if title else "").split())}))
    if not rows:
        raise InputError("no <top> block found (TREC topics)", path=str(path))
    return Table(path, tuple(rows))


def _open(path: Path):
    try:
        return open_text(path)
    except FileNotFoundError as exc:
        raise InputError("file not found", path=str(path)) from exc
    except UnicodeDecodeError as exc:   # pragma: no cover - raised on read, below
        raise InputError(f"not UTF-8 text ({exc})", path=str(path)) from exc


# -- one subset's files --------------------------------------------------------------------------
def _first(folder: Path, names: tuple[str, ...]) -> Path | None:
    return next((folder / n for n in names if (folder / n).exists()), None)


def _need(folder: Path, names: tuple[str, ...], what: str) -> Path:
    found = _first(folder, names)
    if found is None:
        raise InputError(f"no {what} ({' or '.join(names)})", path=str(folder))
    return found


def subset_tables(folder: Path, fmt: str, split: str) -> tuple[Table, Table, Table]:
    """``(corpus, queries, qrels)`` of the files in ``folder``, as read."""
    if fmt == "beir":
        if _first(folder, ("queries.jsonl",)) is None and _first(folder, _MARKERS["trec"]):
            raise InputError("no queries (queries.jsonl) for BEIR, but TREC topics: give "
                             "--format trec", path=str(folder))
        corpus = read_jsonl(_need(folder, ("corpus.jsonl",), "corpus"),
                            {"id": ("_id", "id"), "title": ("title",), "text": ("text",)})
        queries = read_jsonl(_need(folder, ("queries.jsonl",), "queries"),
                             {"id": ("_id", "id"), "text": ("text",)})
        qrels_path = _need(folder / "qrels", (f"{split}.tsv",), f"qrels of split {split!r}")
        qrels = read_delimited(qrels_path, ("query-id", "corpus-id", "score"), delimiter="\t")
    elif fmt == "trec":
        topics = _need(folder, ("topics.tsv", "queries.tsv", "topics.txt"), "topics")
        queries = (read_trec_topics(topics) if topics.suffix == ".txt" else
                   read_delimited(topics, ("id", "text"), delimiter="\t", header=False))
        qrels = read_delimited(_need(folder, ("qrels.txt", "qrels", "qrels.tsv"), "qrels"),
                               ("query-id", "iteration", "corpus-id", "score"), delimiter=" ",
                               header=False, whitespace=True)
        docs = _need(folder, ("corpus.tsv", "corpus.jsonl"), "corpus")
        corpus = (read_jsonl(docs, {"id": ("_id", "id", "docno"), "title": ("title",),
                                    "text": ("text", "contents", "body")})
                  if docs.suffix == ".jsonl" else
                  read_delimited(docs, ("id", "title", "text"), delimiter="\t", header=False))
    elif fmt == "csv":
        corpus = read_delimited(_need(folder, ("corpus.csv",), "corpus"), ("id", "title", "text"),
                                delimiter=",", header=True)
        queries = read_delimited(_need(folder, ("queries.csv",), "queries"), ("id", "text"),
                                 delimiter=",", header=True)
        qrels = read_delimited(_need(folder, ("qrels.csv",), "qrels"),
                               ("query-id", "corpus-id", "score"), delimiter=",", header=True)
    else:
        raise UsageError(f"unknown local format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return corpus, queries, qrels


def table_tables(path: Path, columns: dict[str, str], grade_map: dict[str, int],
                 subset_column: str = "") -> tuple[Table, Table, Table]:
    """``(corpus, queries, qrels)`` of one table of (query, document, grade) rows: a query or
    document given on several rows is one (ids from the id columns or made from the text)."""
    rows = local_table.read_rows(path)
    cols = local_table.find_columns(rows, columns)
    if subset_column and subset_column not in rows.frame.columns:
        raise InputError(f"has no column {subset_column!r} (--subset-column)", path=str(path),
                         row=1, field=subset_column)
    docs: dict[tuple[str, str], Record] = {}
    queries: dict[tuple[str, str], Record] = {}
    qrels = []
    for i, cells in enumerate(rows.frame.to_dict("records")):
        line = rows.first_row + i
        group = cells.get(subset_column, "") if subset_column else ""
        extra = {subset_column: group} if subset_column else {}
        q_text, d_text = cells[cols["query"]], cells[cols["document"]]
        qid = cells.get(cols.get("query_id", ""), "").strip() or local_table.stable_id(
            "q", q_text)
        did = cells.get(cols.get("document_id", ""), "").strip() or local_table.stable_id(
            "d", d_text)
        for store, key, text, what, column in ((queries, qid, q_text, "query", cols["query"]),
                                               (docs, did, d_text, "document",
                                                cols["document"])):
            seen = store.get((group, key))
            if seen is not None and seen.fields["text"] != text:
                raise InputError(f"{what} id {key!r} has two different texts (rows {seen.line} "
                                 f"and {line})", path=str(path), row=line, field=column)
            if seen is None:
                fields = {"id": key, "text": text, **extra}
                if what == "document":
                    fields["title"] = cells.get(cols.get("title", ""), "")
                store[group, key] = Record(line, fields)
        grade = local_table.grade_value(cells[cols["grade"]], grade_map, path, line,
                                        cols["grade"])
        qrels.append(Record(line, {"query-id": qid, "corpus-id": did, "score": str(grade),
                                   **extra}))
    return (Table(path, tuple(docs.values())), Table(path, tuple(queries.values())),
            Table(path, tuple(qrels)))


# -- checks --------------------------------------------------------------------------------------
def _ids(table: Table, what: str, *, allow_empty: bool = False) -> dict[str, int]:
    """Id -> line, refusing a missing id, an id given twice and (unless ``allow_empty``) an
    empty text."""
    seen: dict[str, int] = {}
    for r in table.rows:
        key = r.fields.get("id", "").strip()
        if not key:
            raise InputError(f"a {what} has no id", path=str(table.path), row=r.line, field="id")
        if key in seen:
            raise InputError(f"{what} id {key!r} appears twice (lines {seen[key]} and {r.line})",
                             path=str(table.path), row=r.line, field="id")
        if not allow_empty and not r.fields.get("text", "").strip():
            raise InputError(f"{what} {key!r} has empty text", path=str(table.path), row=r.line,
                             field="text")
        seen[key] = r.line
    return seen


def grade_of(raw: str, path: Path, line: int) -> int:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value) or value != int(value):
        raise InputError(f"grade {raw!r} is not an integer", path=str(path), row=line,
                         field="score")
    if not -_GRADE_LIMIT < value < _GRADE_LIMIT:
        shown = raw if len(str(raw)) <= 30 else f"{str(raw)[:30]}... ({len(str(raw))} characters)"
        raise InputError(f"grade {shown!r} is out of range (at most 18 digits)", path=str(path),
                         row=line, field="score")
    return int(value)


_GRADE_LIMIT = 1e18   # below int64's bound, as a float compares exactly


def check_qrels(qrels: Table, queries: dict[str, int], docs: dict[str, int],
                grades: tuple[int, int] | None) -> list[tuple[str, str, int]]:
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for r in qrels.rows:
        q, d = r.fields.get("query-id", "").strip(), r.fields.get("corpus-id", "").strip()
        if q not in queries:
            raise InputError(f"qrel names query {q!r}, which is not in the queries file",
                             path=str(qrels.path), row=r.line, field="query-id")
        if d not in docs:
            raise InputError(f"qrel names document {d!r}, which is not in the corpus",
                             path=str(qrels.path), row=r.line, field="corpus-id")
        g = grade_of(r.fields.get("score", ""), qrels.path, r.line)
        if grades is not None and not grades[0] <= g <= grades[1]:
            raise InputError(f"grade {g} is outside the declared scale {grades[0]}..{grades[1]}"
                             " ([source] grades)", path=str(qrels.path), row=r.line,
                             field="score")
        if (q, d) in seen:
            raise InputError(f"qrel for query {q!r}, document {d!r} appears twice (lines "
                             f"{seen[q, d]} and {r.line})", path=str(qrels.path), row=r.line)
        seen[q, d] = r.line
        rows.append((q, d, g))
    return rows


# -- the reader ----------------------------------------------------------------------------------
def data_root(spec: SuiteSpec, options: dict | None = None) -> Path:
    """The data folder: ``--source-option path=DIR``, else ``[source] path`` (relative to the
    spec file)."""
    raw = (options or {}).get("path") or spec.source.path
    if not raw:
        raise InputError("a local suite names its data folder ([source] path)", path=spec.path,
                         field="source.path")
    root = Path(raw)
    if not root.is_absolute() and spec.path:
        root = Path(spec.path).parent / root
    if not root.is_dir():
        raise InputError("the data folder ([source] path) is not a folder", path=str(root),
                         field="source.path")
    return root


def _corpus(table: Table, group: str | None = None) -> CorpusReader:
    ids = [r.fields["id"].strip() for r in table.rows]
    frame = pa.table({"id": pa.array(ids, pa.string()),
                      "title": pa.array([r.fields.get("title", "") for r in table.rows],
                                        pa.string()),
                      "text": pa.array([r.fields.get("text", "") for r in table.rows],
                                       pa.string())})
    known = pa.array(ids, pa.string())

    def batches() -> Iterator[pa.RecordBatch]:
        yield from frame.to_batches(max_chunksize=65_536)

    def contains(values: pa.Array) -> pa.Array:
        import pyarrow.compute as pc

        return pc.is_in(values, value_set=known)

    source = str(table.path)
    empty = [(i, r.fields["id"].strip()) for i, r in enumerate(table.rows, 1)
             if not r.fields.get("text", "").strip()]
    facts = CorpusFacts(len(ids), tuple(d for _, d in empty),
                        table.rows[empty[0][0] - 1].line if empty else None, source=source)
    return CorpusReader(batches, group=group, size=len(ids), schema=frame.schema,
                        contains=contains, facts_of=lambda: facts, source=source)


def read_subset(name: str, corpus: Table, queries: Table, qrels: Table,
                grades: tuple[int, int] | None, *, allow_empty: bool = False) -> SubsetSource:
    """One checked subset from its three tables (``allow_empty``: documents may have empty
    text, ``[source] allow_empty_documents``; they enter no pool)."""
    docs = _ids(corpus, "document", allow_empty=allow_empty)
    qids = _ids(queries, "query")
    rows = check_qrels(qrels, qids, docs, grades)
    q_frame = pd.DataFrame({"id": list(qids),
                            "text": [r.fields["text"] for r in queries.rows]})
    qrel_frame = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"]).astype(
        {"score": "int64"})
    reader = _corpus(corpus)
    empty = list(reader.facts().empty_ids)
    return SubsetSource(name, reader, q_frame, qrel_frame,
                        notes={"empty_ids": empty} if empty else {},
                        origins={"queries": str(queries.path), "qrels": str(qrels.path)})


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Source reader of a local suite (``[source] read = "local"``)."""
    fmt = spec.source.format
    if fmt not in FORMATS:
        raise InputError(f"must be one of {', '.join(FORMATS)}", path=spec.path,
                         field="source.format")
    grades = spec.source.grades
    if fmt == "irds":
        subs = {sub.name: irds_subset(sub.name, sub.source or sub.name, grades,
                                      allow_empty=spec.allows_empty_documents(sub.name))
                for sub in spec.subsets}
        return SuiteSource(spec.name, subs, {"reader": READER, "format": fmt})
    root = data_root(spec, options)
    subsets: dict[str, SubsetSource] = {}
    column = spec.source.subset_column
    if fmt == "table":
        if not spec.source.table:
            raise InputError("a table suite names its file ([source] table)", path=spec.path,
                             field="source.table")
        whole = table_tables(root / spec.source.table, dict(spec.source.columns),
                             dict(spec.source.grade_map), column)
        shared = whole if column else None
        if not column:
            only = spec.subsets[0].name if len(spec.subsets) == 1 else None
            if only is None:
                raise InputError("a table suite of several subsets names its subset column "
                                 "([source] subset_column)", path=spec.path,
                                 field="source.subset_column")
            return SuiteSource(spec.name, {only: read_subset(
                only, *whole, grades, allow_empty=spec.allows_empty_documents(only))},
                {"reader": READER, "format": fmt, "path": str(root)})
    else:
        shared = subset_tables(root, fmt, spec.split) if column else None
    for sub in spec.subsets:
        if shared is not None:
            value = sub.source or sub.name
            tables = tuple(t.only(column, value) for t in shared)
            if not tables[1].rows:
                raise InputError(f"no query has {column} = {value!r} (subset {sub.name})",
                                 path=str(shared[1].path), field=column)
        else:
            tables = subset_tables(root / sub.source if sub.source else root, fmt, spec.split)
        subsets[sub.name] = read_subset(sub.name, *tables, grades,
                                        allow_empty=spec.allows_empty_documents(sub.name))
    return SuiteSource(spec.name, subsets, {"reader": READER, "format": fmt, "path": str(root)})


def irds_tables(dataset_id: str) -> tuple[object, Table, Table]:
    """``(dataset, queries, qrels)`` of an ir_datasets id, as tables (rows count from 1)."""
    from rcp_data.sources import irds

    dataset = irds.load(dataset_id)
    where = f"ir_datasets {dataset_id}"
    with irds.upstream(dataset_id, "queries", where):
        queries = Table(Path(f"{where} queries"), tuple(
            Record(i, {"id": str(q.query_id), "text": q.text or ""})
            for i, q in enumerate(dataset.queries_iter(), 1)))
    with irds.upstream(dataset_id, "qrels", where):
        qrels = Table(Path(f"{where} qrels"), tuple(
            Record(i, {"query-id": str(q.query_id), "corpus-id": str(q.doc_id),
                       "score": str(q.relevance)})
            for i, q in enumerate(dataset.qrels_iter(), 1)))
    return dataset, queries, qrels


def irds_subset(name: str, dataset_id: str, grades: tuple[int, int] | None, *,
                allow_empty: bool = False) -> SubsetSource:
    """One checked subset read from ir_datasets (the corpus streamed, scanned once)."""
    from rcp_data.sources import irds

    dataset, queries, qrels = irds_tables(dataset_id)
    scan = irds.scan_corpus(dataset, dataset_id, f"ir_datasets {dataset_id} docs")
    if scan.empty_ids and not allow_empty:
        raise InputError(f"document {scan.empty_ids[0]!r} has empty text", path=scan.path,
                         row=scan.first_empty_row, field="text")
    qids = _ids(queries, "query")
    rows = check_qrels(qrels, qids, scan, grades)   # a scan answers ``in`` like a dict
    q_frame = pd.DataFrame({"id": list(qids), "text": [r.fields["text"] for r in queries.rows]})
    qrel_frame = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"]).astype(
        {"score": "int64"})
    return SubsetSource(name, irds.corpus_reader(dataset_id, scan), q_frame, qrel_frame,
                        notes={"empty_ids": list(scan.empty_ids)} if scan.empty_ids else {},
                        origins={"queries": str(queries.path), "qrels": str(qrels.path)})


def inspect_irds(ids: list[str]) -> Found:
    """The subsets (one per ir_datasets id) and grade scale of ir_datasets ids."""
    counts: dict[int, int] = {}
    found = []
    for dataset_id in ids:
        dataset, queries, qrels = irds_tables(dataset_id)
        for r in qrels.rows:
            g = grade_of(r.fields["score"], qrels.path, r.line)
            counts[g] = counts.get(g, 0) + 1
        found.append(FoundSubset(subset_name(dataset_id), dataset_id, len(queries.rows),
                                 dataset.docs_count() or 0))
    if not counts:
        raise InputError("the qrels hold no grade", path=f"ir_datasets {', '.join(ids)}")
    return Found(Path("."), "irds", tuple(found), (min(min(counts), 0), max(counts)),
                 dict(sorted(counts.items())))


# -- what ``suite init`` finds in a folder -------------------------------------------------------
@dataclass(frozen=True)
class FoundSubset:
    name: str               # a subset name (letters, digits, ``_``)
    source: str             # its sub-folder, or its value of the subset column ("" : the root)
    queries: int
    documents: int


@dataclass(frozen=True)
class Found:
    """The layout of a data folder: its format, subsets and the grades its qrels use."""

    root: Path
    format: str
    subsets: tuple[FoundSubset, ...]
    grades: tuple[int, int]
    grade_counts: dict[int, int]
    subset_column: str = ""
    detected: bool = False        # the format was found from the file names (not --format)
    table: str = ""               # format table: the file's name in ``root``
    columns: tuple[tuple[str, str], ...] = ()     # format table: role -> column
    grade_map: tuple[tuple[str, int], ...] = ()   # format table: value -> grade


_MARKERS = {"beir": ("corpus.jsonl",), "trec": ("topics.tsv", "queries.tsv", "topics.txt"),
            "csv": ("corpus.csv",)}


def _format_of(folder: Path) -> str | None:
    """The format of a folder's files: BEIR needs its queries.jsonl beside corpus.jsonl (a TREC
    folder may hold a corpus.jsonl too)."""
    if _first(folder, ("corpus.jsonl",)) and _first(folder, ("queries.jsonl",)):
        return "beir"
    if _first(folder, _MARKERS["trec"]) and _first(folder, ("qrels.txt", "qrels", "qrels.tsv")):
        return "trec"
    if _first(folder, _MARKERS["csv"]):
        return "csv"
    if _first(folder, ("corpus.jsonl",)):
        return "beir"
    return None


OTHER_FORMATS = "--format beir|trec|csv|table"   # the flag that chooses another format


def inspect_table(path: Path, *, columns: dict[str, str] | None = None,
                  grade_map: dict[str, int] | None = None, subset_column: str = "") -> Found:
    """The subsets (one, or one per value of ``subset_column``) and grade scale of a table of
    (query, document, grade) rows."""
    rows = local_table.read_rows(path)
    cols = local_table.find_columns(rows, columns or {})
    tables = table_tables(path, cols, grade_map or {}, subset_column)
    counts: dict[int, int] = {}
    for r in tables[2].rows:
        g = int(r.fields["score"])
        counts[g] = counts.get(g, 0) + 1
    if not counts:
        raise InputError("the table holds no row", path=str(path))
    if subset_column:
        values = list(dict.fromkeys(r.fields[subset_column] for r in tables[1].rows))
        subsets = tuple(FoundSubset(subset_name(v), v, len(tables[1].only(subset_column, v).rows),
                                    len(tables[0].only(subset_column, v).rows)) for v in values)
    else:
        subsets = (FoundSubset(subset_name(path.stem), "", len(tables[1].rows),
                               len(tables[0].rows)),)
    used = {k: v for k, v in (grade_map or {}).items()}
    return Found(path.parent, "table", subsets, (min(min(counts), 0), max(counts)),
                 dict(sorted(counts.items())), subset_column, table=path.name,
                 columns=tuple(cols.items()), grade_map=tuple(used.items()))


def subset_name(raw: str) -> str:
    name = re.sub(r"[^0-9A-Za-z_]+", "_", raw).strip("_").lower()
    return name or "main"


def inspect_folder(root: Path, *, fmt: str | None = None, split: str = "test",
                   subset_column: str = "", columns: dict[str, str] | None = None,
                   grade_map: dict[str, int] | None = None) -> Found:
    """The format, subsets (one per sub-folder, or per value of ``subset_column``) and grade
    scale of the benchmark in ``root``; an InputError when it holds none of the formats."""
    root = Path(root)
    if fmt == "table" or (fmt is None and local_table.is_table(root)):
        if not root.is_file():
            raise InputError("--format table reads one file (CSV, TSV, JSON lines or parquet)",
                             path=str(root))
        return replace(inspect_table(root, columns=columns, grade_map=grade_map,
                                     subset_column=subset_column), detected=fmt is None)
    if not root.is_dir():
        raise InputError("not a folder, nor a table file (.csv, .tsv, .jsonl, .parquet)",
                         path=str(root))
    here = fmt or _format_of(root)
    folders: list[tuple[str, Path]] = []
    if here is not None and _first(root, _MARKERS[here]) is not None:
        folders = [("", root)]
    else:
        for child in sorted(p for p in root.iterdir() if p.is_dir()):
            found = fmt or _format_of(child)
            if found is None:
                continue
            if here is not None and found != here:
                raise InputError(f"mixes formats ({here} and {found})", path=str(child))
            here = found
            folders.append((child.name, child))
    if here is None or not folders:
        raise InputError("holds no benchmark: expected BEIR folders (corpus.jsonl, "
                         "queries.jsonl, qrels/<split>.tsv), TREC topics + qrels + corpus, or "
                         "CSV tables (corpus.csv, queries.csv, qrels.csv), here or one "
                         "sub-folder per subset, or one table file of (query, document, grade) "
                         f"rows; {OTHER_FORMATS} chooses one", path=str(root))
    counts: dict[int, int] = {}
    found_subsets = []

    def count(name: str, source: str, tables: tuple[Table, Table, Table]) -> None:
        corpus, queries, qrels = tables
        for r in qrels.rows:
            g = grade_of(r.fields.get("score", ""), qrels.path, r.line)
            counts[g] = counts.get(g, 0) + 1
        found_subsets.append(FoundSubset(name, source, len(queries.rows), len(corpus.rows)))

    if subset_column:
        if folders != [("", root)]:
            raise UsageError("--subset-column needs the tables in the folder itself")
        tables = subset_tables(root, here, split)
        values = list(dict.fromkeys(r.fields.get(subset_column, "") for r in tables[1].rows))
        if "" in values:
            line = next(r.line for r in tables[1].rows if not r.fields.get(subset_column))
            raise InputError("a query has no subset value", path=str(tables[1].path), row=line,
                             field=subset_column)
        for value in values:
            count(subset_name(value), value, tuple(t.only(subset_column, value) for t in tables))
    else:
        for source, folder in folders:
            count(subset_name(source or root.name), source, subset_tables(folder, here, split))
    names = [s.name for s in found_subsets]
    if len(set(names)) != len(names):
        raise InputError(f"two subsets get the same name ({names})", path=str(root))
    if not counts:
        raise InputError("the qrels hold no grade", path=str(root))
    return Found(root, here, tuple(found_subsets), (min(min(counts), 0), max(counts)),
                 dict(sorted(counts.items())), subset_column, detected=fmt is None)


__all__ = ["FORMATS", "IRDS", "OTHER_FORMATS", "READER", "Found", "FoundSubset", "inspect_folder",
           "inspect_irds", "inspect_table", "read_suite", "table_tables"]
