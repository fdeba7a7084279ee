"""BM25 first stage with ``bm25s`` over a streamed corpus (docs/concepts "Pools").

Settings: bm25s method ``lucene``, k1 1.5, b 0.75, English stopwords, Snowball (PyStemmer)
English stemmer, bm25s' default splitter and lower-casing.

``bm25s.BM25.index`` wants every document's token list in memory as Python lists, which does not
fit for MS MARCO's 8.8M passages on a small machine. So the index is built here in bounded
memory, with bm25s' own tokenizer and scoring functions:

1. the corpus is streamed in slices of documents, each tokenized with the tokenizer's
   ``streaming_tokenize``; the (term, document, term frequency) postings of a slice are appended
   to a temporary spill folder on disk; document lengths and document frequencies are kept;
2. the spill is read back in chunks: bm25s' lucene idf and term-frequency components give each
   posting's score, which is placed straight into its term's column of the score matrix
   (compressed sparse columns: documents ascending within a term).

Memory: the score matrix (8 bytes a posting: about 2.8 GB for MS MARCO), the document lengths
and ids, one slice and one chunk. The matrix is handed to a ``bm25s.BM25`` object for scoring
queries. The result equals ``bm25s.BM25(...).index(bm25s.tokenize(...))`` (checked in
``tests/building/test_bm25.py``).
"""

from __future__ import annotations

import itertools
import logging
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import pandas as pd
import pyarrow as pa
from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

from rcp_data.building.pools import normalize_run
from rcp_data.core.errors import InputError
from rcp_data.core.progress import progress
from rcp_data.sources.base import CorpusReader

log = logging.getLogger(__name__)

RETRIEVER = "bm25"
METHOD = "lucene"
K1 = 1.5
B = 0.75
STOPWORDS = "english"
STEMMER = "english"  # PyStemmer's Snowball English stemmer
SLICE_DOCS = 20_000        # documents tokenized at once
CHUNK_POSTINGS = 1 << 23   # postings scored and placed at once


def settings() -> dict:
    """The BM25 settings, for the build manifest."""
    return {"library": "bm25s", "version": bm25s.__version__, "method": METHOD, "k1": K1,
            "b": B, "stopwords": STOPWORDS, "stemmer": f"PyStemmer snowball {STEMMER}"}


def make_tokenizer() -> bm25s.tokenization.Tokenizer:
    """bm25s' tokenizer with the project's settings (fresh vocabulary)."""
    import Stemmer

    return bm25s.tokenization.Tokenizer(stopwords=STOPWORDS,
                                         stemmer=Stemmer.Stemmer(STEMMER))


@dataclass
class StreamedIndex:
    """A bm25s retriever over a corpus, with the tokenizer and the corpus ids in index order."""

    retriever: bm25s.BM25
    tokenizer: bm25s.tokenization.Tokenizer
    ids: pa.ChunkedArray

    @property
    def n_docs(self) -> int:
        return len(self.ids)


def tokenize_slice(tok: bm25s.tokenization.Tokenizer, texts: list[str]
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Term ids of ``texts`` (flat, in document order) and the number of terms per document,
    from the tokenizer's own ``streaming_tokenize`` (growing its vocabulary)."""
    lists = list(tok.streaming_tokenize(texts, update_vocab=True, allow_empty=False))
    per_doc = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    terms = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int64,
                        count=int(per_doc.sum()))
    return terms, per_doc


class _Spill:
    """Postings ``(term int32, doc int32, tf float32)`` appended to files, read back in chunks."""

    DTYPES = {"term": np.int32, "doc": np.int32, "tf": np.float32}

    def __init__(self, folder: Path) -> None:
        self.paths = {k: folder / f"{k}.bin" for k in self.DTYPES}
        self._out = {k: p.open("wb") for k, p in self.paths.items()}
        self.n = 0

    def append(self, term: np.ndarray, doc: np.ndarray, tf: np.ndarray) -> None:
        for key, values in (("term", term), ("doc", doc), ("tf", tf)):
            values.astype(self.DTYPES[key], copy=False).tofile(self._out[key])
        self.n += len(term)

    def chunks(self, size: int):
        for fh in self._out.values():
            fh.close()
        handles = {k: p.open("rb") for k, p in self.paths.items()}
        try:
            for _ in range(0, self.n, size):
                yield tuple(np.fromfile(handles[k], dtype=self.DTYPES[k], count=size)
                            for k in ("term", "doc", "tf"))
        finally:
            for fh in handles.values():
                fh.close()


def _postings(local_terms: np.ndarray, per_doc: np.ndarray, first_doc: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(term, doc, tf)`` of one slice: distinct (document, term) pairs, documents ascending,
    terms ascending within a document."""
    local = np.repeat(np.arange(len(per_doc), dtype=np.int64), per_doc)
    keys, counts = np.unique((local << 32) | local_terms, return_counts=True)
    return keys & 0xFFFFFFFF, (keys >> 32) + first_doc, counts


def build_index(corpus: CorpusReader, *, text_column: str = "text",
                title_column: str | None = "title",
                spill_dir: str | Path | None = None) -> StreamedIndex:
    """Tokenize ``corpus`` slice by slice and build the BM25 score matrix (lucene) in bounded
    memory (see the module docstring); ``spill_dir``: where the temporary postings go
    (default: the system's temporary folder)."""
    tok = make_tokenizer()
    lengths, id_chunks = [], []
    df = np.zeros(0, dtype=np.int64)
    n = 0
    bar = progress(total=corpus.size, unit="doc", desc="bm25 tokenize", leave=False)
    with tempfile.TemporaryDirectory(prefix="rcp-bm25-", dir=spill_dir) as tmp:
        spill = _Spill(Path(tmp))
        try:
            for batch in corpus.batches():
                id_chunks.append(batch.column(batch.schema.get_field_index("id"))
                                 .cast(pa.string()))
                for lo in range(0, batch.num_rows, SLICE_DOCS):
                    part = batch.slice(lo, SLICE_DOCS)
                    terms, per_doc = tokenize_slice(tok, _texts(part, text_column, title_column))
                    term, doc, tf = _postings(terms, per_doc, n)
                    spill.append(term, doc, tf)
                    counts = np.bincount(term, minlength=len(df))
                    if len(counts) > len(df):
                        df = np.concatenate([df, np.zeros(len(counts) - len(df), np.int64)])
                    df += counts
                    lengths.append(per_doc.astype(np.int32))
                    n += part.num_rows
                    bar.update(part.num_rows)
        finally:
            bar.close()
        if n == 0:
            raise InputError("cannot build a BM25 index over an empty corpus")
        vocab = dict(tok.get_vocab_dict())
        doc_len = np.concatenate(lengths)
        del lengths
        data, indices, indptr = _score_matrix(spill, df, doc_len, len(vocab))
    retriever = bm25s.BM25(method=METHOD, k1=K1, b=B)
    retriever.scores = {"data": data, "indices": indices, "indptr": indptr, "num_docs": n}
    if "" not in vocab:
        vocab[""] = max(vocab.values(), default=-1) + 1
    retriever.vocab_dict = vocab
    retriever.nonoccurrence_array = None
    retriever.unique_token_ids_set = set(vocab.values())
    log.info("BM25 index over %d documents: %d terms, %d postings", n, len(vocab), len(data))
    return StreamedIndex(retriever, tok, pa.chunked_array(id_chunks, type=pa.string()))


def _score_matrix(spill: _Spill, df: np.ndarray, doc_len: np.ndarray, n_vocab: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lucene score of every posting, in compressed sparse columns (one per term,
    documents ascending): ``(data float32, indices int32, indptr int64)``."""
    n = len(doc_len)
    df = np.concatenate([df, np.zeros(max(n_vocab - len(df), 0), np.int64)])[:n_vocab]
    avg_len = np.array(doc_len, dtype=np.float64).mean()  # a numpy float64, as in bm25s
    idf_fn = _select_idf_scorer(METHOD)
    idf = np.zeros(n_vocab, dtype=np.float32)
    nz = np.flatnonzero(df)
    idf[nz] = [idf_fn(int(d), N=n) for d in df[nz]]
    tfc_fn = _select_tfc_scorer(METHOD)
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    data = np.empty(spill.n, dtype=np.float32)
    indices = np.empty(spill.n, dtype=np.int32)
    cursor = indptr[:-1].copy()
    for term, doc, tf in spill.chunks(CHUNK_POSTINGS):
        tfc = tfc_fn(tf_array=tf, l_d=doc_len[doc].astype(np.float64), l_avg=avg_len, k1=K1,
                     b=B)
        scores = (idf[term] * tfc).astype(np.float32, copy=False)
        order = np.argsort(term, kind="stable")  # chunks come in document order
        term = term[order]
        counts = np.bincount(term, minlength=n_vocab)
        first = np.cumsum(counts) - counts
        dest = cursor[term] + (np.arange(len(term)) - first[term])
        data[dest] = scores[order]
        indices[dest] = doc[order]
        cursor += counts
    return data, indices, indptr


def _texts(batch: pa.RecordBatch, text_column: str, title_column: str | None) -> list[str]:
    text = batch.column(batch.schema.get_field_index(text_column)).to_pylist()
    text = [t or "" for t in text]
    idx = batch.schema.get_field_index(title_column) if title_column else -1
    if idx < 0:
        return text
    titles = batch.column(idx).to_pylist()
    return [f"{h} {t}" if h else t for h, t in zip(titles, text, strict=True)]


def search(index: StreamedIndex, queries: pd.DataFrame, depth: int) -> pd.DataFrame:
    """Top ``depth`` documents per query as ``retriever, query-id, corpus-id, rank, score``.

    Ranks follow score descending, ties by corpus-id descending (byte-wise), as
    :func:`rcp_data.building.pools.normalize_run` orders a run without ranks, so equal scores give the
    same ranking on every run.
    """
    qids = queries["id"].astype(str).tolist()
    token_lists = list(index.tokenizer.streaming_tokenize(queries["text"].astype(str).tolist(),
                                                          update_vocab=False,
                                                          allow_empty=False))
    rows_q, rows_d, rows_s = [], [], []
    ids = index.ids
    for qid, toks in progress(list(zip(qids, token_lists, strict=True)), desc="bm25 search",
                          unit="query", leave=False):
        toks = [t for t in toks if t in index.retriever.unique_token_ids_set]
        if not toks:
            continue
        scores = index.retriever.get_scores_from_ids(toks)
        k = min(depth, len(scores))
        part = np.argpartition(-scores, k - 1)[:k]
        cutoff = scores[part].min()
        cand = np.flatnonzero(scores >= cutoff)  # keep every tie at the boundary
        cand = cand[scores[cand] > 0]
        rows_q.append(np.full(len(cand), qid, dtype=object))
        rows_d.append(np.asarray(ids.take(pa.array(cand)).to_pylist(), dtype=object))
        rows_s.append(scores[cand].astype(np.float64))
    if not rows_q:
        return pd.DataFrame(columns=["retriever", "query-id", "corpus-id", "rank", "score"])
    run = pd.DataFrame({"query-id": np.concatenate(rows_q), "corpus-id": np.concatenate(rows_d),
                        "score": np.concatenate(rows_s)})
    run = normalize_run(run, RETRIEVER, source="bm25")
    return run[run["rank"] <= depth].reset_index(drop=True)


_CACHE: dict[int, tuple[weakref.ref, StreamedIndex]] = {}


def bm25_run(corpus: CorpusReader, queries: pd.DataFrame, depth: int) -> pd.DataFrame:
    """BM25 run of ``queries`` (``id, text``) over ``corpus``, ``depth`` deep per query.

    The index of the last corpus is kept while that corpus object lives, so subsets that share
    one corpus (TREC-DL) index it once.
    """
    cached = _CACHE.get(id(corpus))
    index = cached[1] if cached is not None and cached[0]() is corpus else None
    if index is None:
        _CACHE.clear()
        index = build_index(corpus)
        _CACHE[id(corpus)] = (weakref.ref(corpus), index)
    run = search(index, queries, depth)
    log.info("BM25 run: %d queries, %d rows (depth %d)", run["query-id"].nunique(), len(run),
             depth)
    return run
