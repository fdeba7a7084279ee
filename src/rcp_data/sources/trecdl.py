"""TREC-DL 2019/2020 passage through ir_datasets: MS MARCO corpus (streamed), queries, NIST qrels.

- Corpus: ``msmarco-passage`` (8,841,823 passages), streamed from ``docs_iter()`` in record
  batches, never whole in memory; ONE :class:`CorpusReader` (group ``msmarco_passage``) shared by
  both subsets. The text is ir_datasets' repaired text (``FixEncoding``, cache version ``v2``):
  "the text the judge saw". With ``raw_collection=PATH`` (the upstream, unrepaired
  ``id<TAB>text`` collection, or ``collectionandqueries.tar.gz``), the stream is compared with
  the raw text as it goes: the number of passages that differ is the card's "2,025,452 of
  8,841,823", and every passage is checked to equal :func:`rcp_data.sources.text_repair.repair_text` of its raw
  text (``verify_repair=0`` skips that check). The counts land in ``SuiteSource.facts`` (and so in
  the build manifest) once a full pass has run.
- Queries: ``msmarco-passage/trec-dl-2019/judged`` (43) and ``.../trec-dl-2020/judged`` (54).
- Qrels: NIST grades, integers 0..3 (``[source] grades``); a bad line is an error naming the
  qrels file and line.
- The judge also covered 500 MS MARCO ``dev/small`` queries (``[source] extra_judged_queries``):
  they are NOT released; the build keeps only released queries' thetas, verdicts and runs.

Offline use: place the files at ir_datasets' cache paths (:func:`stage_collection`,
:func:`stage_tarball`, :func:`stage_topics`, :func:`stage_dev_small`). Options
(``--source-option K=V``): ``raw_collection``, ``verify_repair`` (1/0), ``batch_rows``,
``allow_download`` (1: let ir_datasets download what is missing).
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa

from rcp_data.core.errors import InputError, NotFoundError, UsageError
from rcp_data.core.progress import progress
from rcp_data.core.specs import SuiteSpec
from rcp_data.sources import irds, irds_cache
from rcp_data.sources.base import CorpusFacts, CorpusReader, SubsetSource, SuiteSource
from rcp_data.sources.irds_cache import irds_home
from rcp_data.sources.text_repair import count_changed, repair_array, repair_settings

log = logging.getLogger(__name__)

NAMESPACE = "msmarco-passage"
IRDS_CACHE_VERSION = "v2"
CORPUS_SCHEMA = irds.CORPUS_SCHEMA
BATCH_ROWS = 100_000
TARBALL = "collectionandqueries.tar.gz"


# -- cache placement (offline use, tests) ------------------------------------------------------
def msmarco_dir() -> Path:
    """``<ir_datasets home>/msmarco-passage`` (the home ir_datasets fixed at its import).

    Found without touching the corpus handler: its first call runs ir_datasets' migrator, which
    deletes a ``collection.tsv`` that lacks the ``v2`` marker.
    """
    return irds_home() / NAMESPACE


def _place(source: str | Path | bytes, target: Path) -> Path:
    return irds_cache.place_at(source, target)


def _drop_docstore(base: Path) -> None:
    for stale in (base / "collection.tsv.pklz4",):
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()


def stage_collection(tsv: str | Path) -> Path:
    """Place an already repaired ``collection.tsv`` plus ``irds_version.txt`` = ``v2``.

    Without the version file ir_datasets' migrator deletes ``collection.tsv``; a raw
    (unrepaired) file placed this way would be read raw: use :func:`stage_tarball` for that.
    """
    base = msmarco_dir()
    _drop_docstore(base)
    target = _place(tsv, base / "collection.tsv")
    _place(IRDS_CACHE_VERSION.encode(), base / "irds_version.txt")
    return target


def stage_tarball(tarball: str | Path) -> Path:
    """Place ``collectionandqueries.tar.gz`` (raw ``collection.tsv`` inside): ir_datasets
    repairs the text itself when it builds ``collection.tsv`` from it."""
    base = msmarco_dir()
    _drop_docstore(base)
    for stale in (base / "collection.tsv", base / "irds_version.txt"):
        if stale.exists():
            stale.unlink()
    return _place(tarball, base / TARBALL)


def stage_topics(year: int, topics: str | Path, qrels: str | Path) -> dict[str, Path]:
    """Place TREC-DL topics (``qid<TAB>text``) and NIST qrels of ``year`` (2019 or 2020).

    ir_datasets reads 2019's queries as plain ``trec-dl-2019/queries.tsv`` and 2020's as
    gzipped ``trec-dl-2020/queries.tsv.gz``; qrels at ``trec-dl-<year>/qrels``.
    """
    base = msmarco_dir() / f"trec-dl-{year}"
    if year == 2019:
        q = _place(topics, base / "queries.tsv")
    elif year == 2020:
        q = _place(gzip.compress(Path(topics).read_bytes(), mtime=0), base / "queries.tsv.gz")
    else:
        raise UsageError(f"TREC-DL passage years are 2019 and 2020, not {year}")
    return {"queries": q, "qrels": _place(qrels, base / "qrels")}


def stage_dev_small(topics: str | Path, qrels: str | Path) -> dict[str, Path]:
    """Place MS MARCO ``dev/small`` queries and qrels (the judge's extra queries)."""
    base = msmarco_dir() / "dev" / "small"
    return {"queries": _place(topics, base / "queries.tsv"), "qrels": _place(qrels, base / "qrels")}


# -- reading ---------------------------------------------------------------------------------
def _truthy(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def collection_path() -> Path:
    return msmarco_dir() / "collection.tsv"


def _check_cache(allow_download: bool) -> Path:
    """The built ``collection.tsv``; builds it from a placed tarball; refuses to let ir_datasets
    delete a ``collection.tsv`` that lacks the ``v2`` marker."""
    base = msmarco_dir()
    coll = base / "collection.tsv"
    marker = base / "irds_version.txt"
    if coll.exists():
        version = marker.read_text().strip() if marker.exists() else None
        if version != IRDS_CACHE_VERSION:
            raise InputError(
                f"{coll} has no irds_version.txt = {IRDS_CACHE_VERSION!r} beside it (found "
                f"{version!r}); ir_datasets would delete it. If it is ir_datasets' repaired "
                f"collection, write {IRDS_CACHE_VERSION!r} to {marker}; if it is the raw upstream "
                f"file, place {TARBALL} instead (rcp_data.sources.trecdl.stage_tarball)",
                path=str(coll))
        return coll
    if not (base / TARBALL).exists() and not allow_download:
        raise InputError(
            f"no MS MARCO passage collection in the ir_datasets cache: place {TARBALL} or a "
            f"repaired collection.tsv (+ irds_version.txt = {IRDS_CACHE_VERSION}) there, or pass "
            "--source-option allow_download=1", path=str(base))
    log.info("building %s from %s with ir_datasets (it repairs the text)", coll, TARBALL)
    ds = irds.load(NAMESPACE)
    with irds.upstream(NAMESPACE, "corpus", str(coll)):
        # the migrator runs first (writes the v2 marker), then the cache builds collection.tsv
        for _doc in ds.docs_iter():
            break
    if not coll.exists():
        raise InputError("ir_datasets did not build collection.tsv", path=str(coll))
    return coll


def count_lines(path: Path) -> int:
    """Number of lines of a file (a final line without newline counts)."""
    n = 0
    last = b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def _raw_batches(path: Path, batch_rows: int) -> Iterator[tuple[list[str], list[str], int]]:
    """``(ids, texts, first_line)`` batches of a raw ``id<TAB>text`` file or the tarball."""
    if path.name.endswith((".tar.gz", ".tgz", ".tar")):
        with tarfile.open(path) as tar:
            member = next((m for m in tar.getmembers()
                           if Path(m.name).name == "collection.tsv"), None)
            if member is None:
                raise InputError("no collection.tsv inside the archive", path=str(path))
            fh = tar.extractfile(member)
            assert fh is not None
            yield from _tsv_batches(io.BufferedReader(fh), f"{path}:collection.tsv", batch_rows)
        return
    with open(path, "rb") as fh:
        yield from _tsv_batches(fh, str(path), batch_rows)


def _tsv_batches(fh, name: str, batch_rows: int) -> Iterator[tuple[list[str], list[str], int]]:
    ids: list[str] = []
    texts: list[str] = []
    first = 1
    for lineno, raw in enumerate(fh, start=1):
        line = raw[:-1] if raw.endswith(b"\n") else raw
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 ({exc.reason})", path=name, row=lineno) from None
        pid, tab, body = text.partition("\t")
        if not tab:
            raise InputError("no TAB between id and text", path=name, row=lineno)
        ids.append(pid)
        texts.append(body)
        if len(ids) >= batch_rows:
            yield ids, texts, first
            ids, texts, first = [], [], lineno + 1
    if ids:
        yield ids, texts, first


def corpus_reader(facts: dict, *, size: int, batch_rows: int = BATCH_ROWS,
                  raw_collection: Path | None = None, verify_repair: bool = True,
                  group: str = "msmarco_passage") -> CorpusReader:
    """Stream ``msmarco-passage`` from ir_datasets as ``id, title, text`` batches.

    With ``raw_collection``, each batch is aligned with the raw text (same ids, same order):
    ``facts["changed_vs_raw"]`` counts the passages that differ, and with ``verify_repair``
    every passage must equal the project's repair of its raw text. The comparison runs in the
    first pass that reads the whole corpus (the build reads it twice: BM25, then the writer).
    """

    def _batches() -> Iterator[pa.RecordBatch]:
        ds = irds.load(NAMESPACE)
        compare = raw_collection is not None and facts.get("changed_vs_raw") is None
        raw = _raw_batches(raw_collection, batch_rows) if compare else None
        raw_name = str(raw_collection) if raw_collection else ""
        changed = 0
        n = 0
        ids: list[str] = []
        texts: list[str] = []

        def _emit() -> pa.RecordBatch:
            nonlocal changed
            if raw is not None:
                changed += _compare_raw(raw, raw_name, ids, texts, n - len(ids), verify_repair)
            return pa.RecordBatch.from_arrays(
                [pa.array(ids, pa.string()), pa.array([""] * len(ids), pa.string()),
                 pa.array(texts, pa.string())], schema=CORPUS_SCHEMA)

        with irds.upstream(NAMESPACE, "corpus", str(collection_path())):
            for doc in ds.docs_iter():
                ids.append(doc.doc_id)
                texts.append(doc.text)
                n += 1
                if len(ids) >= batch_rows:
                    yield _emit()
                    ids, texts = [], []
        if ids:
            yield _emit()
        if n != size:
            raise InputError(f"ir_datasets gave {n} passages, the cache file has {size} lines",
                             path=str(collection_path()))
        if raw is not None:
            extra = next(raw, None)
            if extra is not None:
                raise InputError(f"the raw collection has more passages than the corpus ({n})",
                                 path=raw_name, row=extra[2])
            facts["changed_vs_raw"] = changed
            facts["verified_against_raw"] = verify_repair
            log.info("MS MARCO text: %d of %d passages differ from the raw collection %s%s",
                     changed, n, raw_name, " (each equal to the project's repair)"
                     if verify_repair else "")

    index = _IdIndex(collection_path())
    return CorpusReader(_batches, group=group, size=size, schema=CORPUS_SCHEMA, contains=index,
                        facts_of=index.facts, source=str(collection_path()))


class _IdIndex:
    """Membership in the collection's ids and the corpus facts, read once from
    ``collection.tsv`` (:func:`scan_collection`: seconds for 8.8M lines, no docs_iter pass)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ids: pa.Array | None = None
        self._facts: CorpusFacts | None = None

    def _scan(self) -> None:
        if self._ids is None:
            self._facts, self._ids = scan_collection(self.path)

    def __call__(self, values: pa.Array) -> pa.Array:
        import pyarrow.compute as pc

        self._scan()
        return pc.is_in(values, value_set=self._ids)

    def facts(self) -> CorpusFacts:
        self._scan()
        assert self._facts is not None
        return self._facts


def scan_collection(path: Path) -> tuple[CorpusFacts, pa.Array]:
    """The facts and the id column of an ``id<TAB>text`` file (lines split at ``\\n`` only,
    like :func:`count_lines`), read in large chunks."""
    import pyarrow.compute as pc

    chunks: list[pa.Array] = []
    empty: list[str] = []
    first_empty = missing = None
    row = 0
    rest = b""

    def take(lines: list[bytes]) -> None:
        nonlocal first_empty, missing, row
        ids = []
        for line in lines:
            row += 1
            pid, _, text = line.partition(b"\t")
            ids.append(pid)
            if not pid:
                missing = missing or row
            elif not text.strip():
                empty.append(pid.decode("utf-8", "replace"))
                first_empty = first_empty or row
        chunks.append(pa.array(ids, pa.binary()))

    with open(path, "rb") as fh:
        while block := fh.read(1 << 25):
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            take(lines)
    if rest:
        take([rest])
    ids = pa.concat_arrays(chunks).cast(pa.string()) if chunks else pa.array([], pa.string())
    repeated = None
    if pc.count_distinct(ids).as_py() != len(ids):
        dup = pd.Series(ids.to_numpy(zero_copy_only=False)).duplicated().to_numpy()
        i = int(dup.argmax())
        repeated = (i + 1, ids[i].as_py())
    facts = CorpusFacts(len(ids), tuple(empty), first_empty, repeated, missing, str(path))
    return facts, ids


def _compare_raw(raw: Iterator, raw_name: str, ids: list[str], texts: list[str], offset: int,
                 verify: bool) -> int:
    got = next(raw, None)
    if got is None:
        raise InputError(f"the raw collection ends before passage {ids[0]!r} (row {offset + 1})",
                         path=raw_name)
    raw_ids, raw_texts, first_line = got
    if raw_ids != ids:
        i = next((i for i, (a, b) in enumerate(zip(raw_ids, ids, strict=False)) if a != b),
                 min(len(raw_ids), len(ids)))
        raise InputError(
            f"raw passage id {raw_ids[i] if i < len(raw_ids) else None!r} where the corpus has "
            f"{ids[i] if i < len(ids) else None!r}: the raw collection must list the same "
            "passages in the same order", path=raw_name, row=first_line + i, field="id")
    if verify:
        fixed = repair_array(raw_texts).texts
        mine = pa.array(texts, pa.string())
        if not fixed.equals(mine):
            diff = [i for i, (a, b) in enumerate(zip(fixed.to_pylist(), texts, strict=True))
                    if a != b]
            i = diff[0]
            raise InputError(
                f"passage {ids[i]!r}: ir_datasets' text differs from the project's repair of the "
                f"raw text ({len(diff)} passage(s) in this batch)", path=raw_name,
                row=first_line + i, field="text")
    return count_changed(raw_texts, texts)


def read_queries(dataset_id: str) -> pd.DataFrame:
    ds = irds.load(dataset_id)
    with irds.upstream(dataset_id, "queries", str(msmarco_dir())):
        rows = [(str(q.query_id), q.text) for q in ds.queries_iter()]
    return pd.DataFrame(rows, columns=["id", "text"])


def _qrels_path(ds) -> str:
    try:
        return str(ds.qrels_handler().qrels_path())
    except Exception:  # noqa: BLE001 - best effort: only names the file in an error
        return str(msmarco_dir())


def read_qrels(dataset_id: str, grades: tuple[int, int] = (0, 3)) -> pd.DataFrame:
    """NIST qrels ``query-id, corpus-id, score`` (int grade within ``grades``).

    The qrels file is checked line by line (:func:`check_qrels_file`), so a bad line (not
    UTF-8, a grade 1.5 or outside ``grades``, a repeated pair) is an InputError naming the
    qrels file and line, and a file without judgements is one too.
    """
    ds = irds.load(dataset_id)
    try:
        rows = [(str(r.query_id), str(r.doc_id), int(r.relevance)) for r in ds.qrels_iter()]
    except (ValueError, RuntimeError) as exc:
        path = _qrels_path(ds)
        if os.path.exists(path):
            check_qrels_file(path, grades)
        raise InputError(f"ir_datasets could not read the qrels of {dataset_id} ({exc})",
                         path=path) from exc
    path = _qrels_path(ds)
    if os.path.exists(path):
        check_qrels_file(path, grades)
    if not rows:
        raise InputError(f"the qrels of {dataset_id} hold no judgements", path=path)
    return pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"]).astype(
        {"score": "int64"})


def check_qrels_file(path: str, grades: tuple[int, int]) -> int:
    """Check a TREC qrels file (``qid iteration docid grade`` per line); return its lines.

    Raises an InputError naming the file and line for text that is not UTF-8, a line of
    another shape, a grade that is not an integer or outside ``grades``, a (query, passage)
    labelled twice, and a file without any judgement.
    """
    seen: set[tuple[str, str]] = set()
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                                 path=path, row=n) from None
            cols = line.split()
            if not cols:
                continue
            if len(cols) != 4:
                raise InputError(f"expected 'qid iteration docid grade', got {line.strip()!r}",
                                 path=path, row=n)
            try:
                grade = int(cols[3])
            except ValueError:
                raise InputError(f"grade {cols[3]!r} is not an integer", path=path, row=n,
                                 field="grade") from None
            if not grades[0] <= grade <= grades[1]:
                raise InputError(f"grade {grade} is outside {grades[0]}..{grades[1]}",
                                 path=path, row=n, field="grade")
            key = (cols[0], cols[2])
            if key in seen:
                raise InputError(f"query {cols[0]!r}, passage {cols[2]!r} is labelled twice",
                                 path=path, row=n)
            seen.add(key)
    if not seen:
        raise InputError("the qrels file holds no judgements", path=path)
    return len(seen)


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Source reader of the TREC-DL suite (``[source] read`` in builders/trecdl.toml)."""
    import ir_datasets

    options = dict(options or {})
    known = {"raw_collection", "verify_repair", "batch_rows", "allow_download"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"unknown TREC-DL source option(s) {unknown}; known: {sorted(known)}")
    grades = spec.grades
    coll = _check_cache(_truthy(options.get("allow_download", "0")))
    size = count_lines(coll)
    raw = Path(options["raw_collection"]) if options.get("raw_collection") else None
    if raw is not None and not raw.exists():
        raise NotFoundError("raw collection not found", path=str(raw))
    repair: dict = {
        "applied_by": "ir_datasets FixEncoding (msmarco-passage collection.tsv, cache version "
                      f"{IRDS_CACHE_VERSION})",
        "checked_with": repair_settings(),
        "raw_collection": raw.name if raw else None,
        "changed_vs_raw": None,
        "verified_against_raw": None,
    }
    corpus = corpus_reader(repair, size=size, batch_rows=int(options.get("batch_rows",
                                                                          BATCH_ROWS)),
                           raw_collection=raw,
                           verify_repair=_truthy(options.get("verify_repair", "1")),
                           group=spec.corpus.group or "msmarco_passage")
    subsets: dict[str, SubsetSource] = {}
    for sub in progress(spec.subsets, desc="read trecdl", unit="subset", leave=False):
        qrels = read_qrels(sub.source, grades)  # first: ir_datasets' judged queries read them
        queries = read_queries(sub.source)
        qids = set(queries["id"])
        unjudged = sorted(set(qrels["query-id"]) - qids)
        if unjudged:
            raise InputError(f"qrels of {sub.source} name queries without text: {unjudged[:5]}",
                             path=_qrels_path(irds.load(sub.source)))
        subsets[sub.name] = SubsetSource(sub.name, corpus, queries, qrels, None, notes={
            "nist_labels": int(len(qrels)),
            "nist_positives": int(spec.positive_mask(qrels["score"]).sum()),
        }, origins={"queries": sub.source, "qrels": _qrels_path(irds.load(sub.source))})
        log.info("%s (%s): %d queries, %d NIST labels", sub.name, sub.source, len(queries),
                 len(qrels))
    facts = {
        "reader": "ir_datasets", "ir_datasets": ir_datasets.__version__,
        "corpus": {"dataset": NAMESPACE, "documents": size, "repair": repair},
        "subsets": {s.name: s.source for s in spec.subsets},
        "extra_judged_queries": {
            "dataset": spec.source.extra_judged_queries,
            "released": False,
            "note": "queries the judge also covered; their thetas, verdicts and runs are "
                    "ignored by the build",
        },
    }
    log.info("msmarco-passage: %d passages (streamed from %s)", size, coll)
    return SuiteSource(spec.name, subsets, facts)


def dev_small_queries() -> pd.DataFrame:
    """The MS MARCO ``dev/small`` queries (6,980): the pool the judge's extra queries come from."""
    return read_queries("msmarco-passage/dev/small")


__all__ = ["read_suite", "stage_collection", "stage_tarball", "stage_topics", "stage_dev_small",
           "corpus_reader", "read_qrels", "read_queries", "count_lines", "msmarco_dir",
           "dev_small_queries"]
