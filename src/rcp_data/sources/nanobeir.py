"""NanoBEIR through ir_datasets: the 13 ``nano-beir/*`` datasets as subsets named after mteb tasks.

Facts about the source (the suites' source notes):

- ir_datasets reads ``nano-beir/<ds>/{corpus,queries,qrels}.parquet`` (``_id, text``; qrels
  ``query-id, corpus-id``) and keeps no title; every qrel has relevance 1, a positive (the
  suite's ``grade_positive``, :func:`rcp_data.core.specs.positive_mask`).
- Documents empty upstream are reported (``notes["empty_documents"]``, their ids in
  ``notes["empty_ids"]``); the builder keeps them out of pools.
- Subsets whose spec says ``excludes = "self-argument"`` (NanoArguAna) exclude each query's own
  argument: see :func:`self_argument_exclusions`.
- An id repeated with different text (corpus, queries) is an InputError; exact repeats are
  folded and counted.
"""

from __future__ import annotations

import logging

import pandas as pd

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import SubsetSpec, SuiteSpec, load_spec, positive_mask
from rcp_data.sources import irds, irds_cache
from rcp_data.sources.base import SubsetSource, SuiteSource
from rcp_data.sources.instructions import mteb_instructions

log = logging.getLogger(__name__)

PREFIX = "nano-beir/"


def _dataset_name(sub: SubsetSpec) -> str:
    return irds.dataset_key(sub, PREFIX, "nano-beir")


def _cache_file(dataset: str, key: str) -> str:
    return irds.cache_file(irds_cache.NANO_BEIR, PREFIX, dataset, key)


def self_argument_exclusions(queries: pd.DataFrame, corpus: pd.DataFrame,
                             positives: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict]:
    """Each query's own argument (ArguAna: queries are arguments of the corpus).

    Excluded for a query: the corpus document under the query's id, and every document under
    another id whose text is byte-identical to the query's own argument, i.e. to that document's
    text or (ArguAna's query text being the argument's text, and the own document possibly absent
    from a Nano corpus) to the query's text. Empty texts never match. A qrel-positive is never
    excluded (counted in ``self_argument_positive_kept``).

    ``queries``: ``id, text``; ``corpus``: ``id, text``; ``positives``: ``query-id, corpus-id``.
    Returns the ``query-id, excluded-corpus-ids`` table (own id first, then copies by id) and
    counts.
    """
    text_of = dict(zip(corpus["id"], corpus["text"], strict=True))
    by_text: dict[str, list[str]] = {}
    for doc_id, text in zip(corpus["id"], corpus["text"], strict=True):
        if text and text.strip():
            by_text.setdefault(text, []).append(doc_id)
    pos = set()
    if positives is not None:
        pos = set(zip(positives["query-id"], positives["corpus-id"], strict=True))
    rows, same_id, copies, kept = [], 0, 0, 0
    for qid, qtext in zip(queries["id"], queries["text"], strict=True):
        own = [qid] if qid in text_of else []
        texts = {t for t in (text_of.get(qid), qtext) if t and t.strip()}
        others = sorted({d for t in texts for d in by_text.get(t, []) if d != qid})
        picked = []
        for doc_id in own + others:
            if (qid, doc_id) in pos:
                kept += 1
                continue
            picked.append(doc_id)
        if not picked:
            continue
        same_id += int(bool(own) and own[0] in picked)
        copies += sum(1 for d in picked if d != qid)
        rows.append((qid, picked))
    table = pd.DataFrame(rows, columns=["query-id", "excluded-corpus-ids"])
    counts = {"self_argument_queries": len(rows), "self_argument_same_id": same_id,
              "self_argument_copies": copies, "self_argument_positive_kept": kept}
    return table, counts


def read_subset(sub: SubsetSpec, *, grade_positive: int) -> SubsetSource:
    """One ``nano-beir/<ds>`` dataset as a :class:`SubsetSource` named after its mteb task."""
    dataset = _dataset_name(sub)
    ds = irds.load(sub.source)
    docs_file = _cache_file(dataset, "docs")
    scan = irds.scan_corpus(ds, sub.source, docs_file)
    corpus = irds.corpus_reader(sub.source, scan)

    queries_file = _cache_file(dataset, "queries")
    with irds.upstream(sub.source, "queries", queries_file):
        queries = pd.DataFrame([(str(q.query_id), q.text) for q in ds.queries_iter()],
                               columns=["id", "text"])
    queries, query_repeats = irds.fold_rows(queries, ["id"], what="query", path=queries_file)

    qrels_file = _cache_file(dataset, "qrels")
    with irds.upstream(sub.source, "qrels", qrels_file):
        qrels = pd.DataFrame(
            [(str(r.query_id), str(r.doc_id), int(r.relevance)) for r in ds.qrels_iter()],
            columns=["query-id", "corpus-id", "score"])
    qrels, qrel_repeats = irds.fold_rows(qrels, ["query-id", "corpus-id"], what="qrel",
                                         path=qrels_file)
    _check_qrels(qrels, set(queries["id"]), scan, qrels_file, grade_positive)

    notes = {
        **irds.reader_notes(scan, queries, qrels),
        "query_repeats": query_repeats,
        "qrel_repeats": qrel_repeats,
    }
    excluded = None
    if sub.excludes == "self-argument":
        frame = corpus.to_frame(["id", "text"])
        excluded, counts = self_argument_exclusions(queries, frame, qrels)
        notes.update(counts)
        log.info("%s: %d queries exclude their own argument (%d same id, %d copies)", sub.name,
                 counts["self_argument_queries"], counts["self_argument_same_id"],
                 counts["self_argument_copies"])
    elif sub.excludes:
        raise UsageError(f"subset {sub.name!r}: unknown exclusion rule {sub.excludes!r}")
    if scan.empty_ids:
        log.info("%s: %d documents are empty upstream (kept out of pools; %d are positives)",
                 sub.name, len(scan.empty_ids), notes["empty_positive_documents"])
    log.info("%s (%s): %d queries, %d qrels, %d documents", sub.name, sub.source, len(queries),
             len(qrels), len(scan))
    origins = {"queries": queries_file, "qrels": qrels_file,
               "excluded": f"{docs_file} (the self-argument rule)"}
    return SubsetSource(sub.name, corpus, queries, qrels, excluded, notes, origins)


def _check_qrels(qrels: pd.DataFrame, query_ids: set[str], scan: irds.CorpusScan, path: str,
                 grade_positive: int) -> None:
    positive = positive_mask(qrels["score"], grade_positive)
    for i, (qid, did, score) in enumerate(zip(qrels["query-id"], qrels["corpus-id"],
                                              qrels["score"], strict=True), start=1):
        if qid not in query_ids:
            raise InputError(f"qrel names unknown query {qid!r}", path=path, row=i,
                             field="query-id")
        if did not in scan:
            raise InputError(f"qrel of query {qid!r} names document {did!r}, which is not in "
                             f"the corpus {scan.path}", path=path, row=i, field="corpus-id")
        if not positive[i - 1]:
            raise InputError(f"qrel grade {score} is not a positive grade (>= {grade_positive}); "
                             "every NanoBEIR qrel is a positive", path=path, row=i,
                             field="score")


def read_nanobeir(spec: SuiteSpec | None = None,
                  subsets: list[str] | None = None) -> SuiteSource:
    """Read the NanoBEIR suite (all subsets of the spec, or the named ones) through ir_datasets."""
    spec = spec or load_spec("nanobeir")
    names = subsets or spec.subset_names
    unknown = [n for n in names if n not in spec.subset_names]
    if unknown:
        raise UsageError(f"suite {spec.name!r} has no subsets {unknown}; "
                         f"known: {', '.join(spec.subset_names)}")
    read = {n: read_subset(spec.subset(n), grade_positive=spec.grade_positive) for n in names}
    facts = {
        "reader": "ir_datasets",
        "ir_datasets": irds.irds_version(),
        "sources": {n: spec.subset(n).source for n in names},
        "queries": sum(len(s.queries) for s in read.values()),
        "qrels": sum(len(s.qrels) for s in read.values()),
        "documents": sum(s.corpus.size or 0 for s in read.values()),
        "empty_documents": sum(s.notes["empty_documents"] for s in read.values()),
    }
    instructions = mteb_instructions(spec, names)
    if instructions is not None:
        import mteb

        facts["instructions"] = instructions
        facts["mteb"] = mteb.__version__
    log.info("nanobeir: %d subsets, %d queries, %d qrels", len(read), facts["queries"],
             facts["qrels"])
    return SuiteSource(spec.name, read, facts)


def _truthy(value: str) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def check_cached(spec: SuiteSpec, names: list[str]) -> None:
    """Offline guard: every upstream file of the named subsets is in ir_datasets' cache."""
    irds.require_cached(irds_cache.NANO_BEIR, [_dataset_name(spec.subset(n)) for n in names],
                        ["docs", "queries", "qrels"], family="nano-beir",
                        stager="stage_nanobeir")


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Source reader of the NanoBEIR suite (``[source] read`` in builders/nanobeir.toml).

    Options (``--source-option K=V``): ``subsets`` (comma list of subset names),
    ``allow_download`` (1, the default: ir_datasets downloads what its cache lacks; 0: refuse).
    """
    options = dict(options or {})
    known = {"subsets", "allow_download"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"unknown NanoBEIR source option(s) {unknown}; known: {sorted(known)}")
    names = [n for n in str(options.get("subsets", "")).split(",") if n] or spec.subset_names
    if not _truthy(options.get("allow_download", "1")):
        check_cached(spec, [n for n in names if n in spec.subset_names])
    return read_nanobeir(spec, names)
