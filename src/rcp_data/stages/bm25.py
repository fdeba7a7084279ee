"""BM25 first stage with ``bm25s`` over a streamed corpus (design note "Pools").

Settings: bm25s method ``lucene``, k1 1.5, b 0.75, English stopwords, Snowball (PyStemmer)
English stemmer, bm25s' default splitter and lower-casing.

``bm25s.BM25.index`` wants every document's token list in memory as Python lists, which does not
fit for MS MARCO's 8.8M passages on a small machine. So the index is built here in two streaming
passes with bm25s' own tokenizer and scoring functions: the corpus is tokenized batch by batch
into compact numpy arrays of (document, term, term frequency), then bm25s' lucene idf and
term-frequency components give the score matrix, which is handed to a ``bm25s.BM25`` object
for scoring queries. The result equals ``bm25s.BM25(...).index(bm25s.tokenize(...))`` (checked in
``tests/test_bm25.py``).
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass

import bm25s
import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp
from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

from rcp_data.core.errors import InputError
from rcp_data.core.progress import progress
from rcp_data.sources.base import CorpusReader
from rcp_data.stages.pools import normalize_run

log = logging.getLogger(__name__)

RETRIEVER = "bm25"
METHOD = "lucene"
K1 = 1.5
B = 0.75
STOPWORDS = "english"
STEMMER = "english"  # PyStemmer's Snowball English stemmer


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


def build_index(corpus: CorpusReader, *, text_column: str = "text",
                title_column: str | None = "title") -> StreamedIndex:
    """Tokenize ``corpus`` batch by batch and build the BM25 score matrix (lucene)."""
    tok = make_tokenizer()
    docs, terms, tfs, lengths, id_chunks = [], [], [], [], []
    n = 0
    bar = progress(total=corpus.size, unit="doc", desc="bm25 tokenize", leave=False)
    try:
        for batch in corpus.batches():
            texts = _texts(batch, text_column, title_column)
            id_chunks.append(batch.column(batch.schema.get_field_index("id")).cast(pa.string()))
            token_lists = list(tok.streaming_tokenize(texts, update_vocab=True, allow_empty=False))
            lens = np.fromiter((len(t) for t in token_lists), dtype=np.int64,
                               count=len(token_lists))
            flat = np.fromiter((i for t in token_lists for i in t), dtype=np.int64,
                               count=int(lens.sum()))
            local = np.repeat(np.arange(len(token_lists), dtype=np.int64), lens)
            keys, counts = np.unique((local << 32) | flat, return_counts=True)
            docs.append(((keys >> 32) + n).astype(np.int32))
            terms.append((keys & 0xFFFFFFFF).astype(np.int32))
            tfs.append(counts.astype(np.float32))
            lengths.append(lens.astype(np.int32))
            n += len(token_lists)
            bar.update(len(token_lists))
    finally:
        bar.close()
    if n == 0:
        raise InputError("cannot build a BM25 index over an empty corpus")
    doc = np.concatenate(docs)
    del docs
    term = np.concatenate(terms)
    del terms
    tf = np.concatenate(tfs)
    del tfs
    doc_len = np.concatenate(lengths)
    vocab = dict(tok.get_vocab_dict())
    n_vocab = len(vocab)
    avg_len = np.array(doc_len, dtype=np.float64).mean()  # a numpy float64, as in bm25s
    df = np.bincount(term, minlength=n_vocab)
    idf_fn = _select_idf_scorer(METHOD)
    idf = np.zeros(n_vocab, dtype=np.float32)
    nz = np.flatnonzero(df)
    idf[nz] = [idf_fn(int(d), N=n) for d in df[nz]]
    tfc_fn = _select_tfc_scorer(METHOD)
    scores = np.empty(len(tf), dtype=np.float32)
    step = 1 << 24  # in slices: no full-size float64 temporaries at MS MARCO scale
    for lo in range(0, len(tf), step):
        hi = lo + step
        tfc = tfc_fn(tf_array=tf[lo:hi], l_d=doc_len[doc[lo:hi]].astype(np.float64),
                     l_avg=avg_len, k1=K1, b=B)
        scores[lo:hi] = idf[term[lo:hi]] * tfc
    del tf
    matrix = sp.csc_matrix((scores, (doc, term)), shape=(n, n_vocab), dtype=np.float32)
    del scores, doc, term
    retriever = bm25s.BM25(method=METHOD, k1=K1, b=B)
    retriever.scores = {"data": matrix.data, "indices": matrix.indices.astype(np.int32),
                        "indptr": matrix.indptr, "num_docs": n}
    if "" not in vocab:
        vocab[""] = max(vocab.values(), default=-1) + 1
    retriever.vocab_dict = vocab
    retriever.nonoccurrence_array = None
    retriever.unique_token_ids_set = set(vocab.values())
    log.info("BM25 index over %d documents: %d terms, %d postings", n, n_vocab, matrix.nnz)
    return StreamedIndex(retriever, tok, pa.chunked_array(id_chunks, type=pa.string()))


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
    :func:`rcp_data.stages.pools.normalize_run` orders a run without ranks, so equal scores give the
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
