"""BM25 over a streamed corpus equals bm25s' own in-memory pipeline (same settings)."""

from __future__ import annotations

import bm25s
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import Stemmer

from rcp_data.building.bm25 import K1, METHOD, B, bm25_run, build_index, search
from rcp_data.sources.base import CorpusReader

WORDS = ["the", "river", "stones", "of", "a", "running", "harbor", "ran", "runs", "engine", "copper", "signal", "meadow", "quartz", "lanterns", "glacier", "and", "it", "is", "to", "be", "or", "not"]  # noqa: SIM905


def _corpus(n: int = 4000, seed: int = 3) -> pd.DataFrame:
    """SYNTHETIC passages (a few consist of stopwords only, one is empty)."""
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 40)))) for _ in range(n)]
    texts[5] = "the of and a"
    texts[6] = ""
    return pd.DataFrame({"id": [str(i * 13 + 7) for i in range(n)], "title": "", "text": texts})


def _chunked(frame: pd.DataFrame, rows: int) -> CorpusReader:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return CorpusReader(lambda: iter(table.to_batches(max_chunksize=rows)), size=len(frame),
                        schema=table.schema)


QUERIES = pd.DataFrame({"id": ["q1", "q2", "q3", "q4"],
                        "text": ["running river stones", "copper harbor engines of the signal",
                                 "the of and", "lantern glaciers meadow quartz"]})


def test_scores_equal_bm25s_in_memory_index():
    frame = _corpus()
    stemmer = Stemmer.Stemmer("english")
    ref = bm25s.BM25(method=METHOD, k1=K1, b=B)
    ref.index(bm25s.tokenize(frame["text"].tolist(), stopwords="en", stemmer=stemmer,
                             show_progress=False), show_progress=False)
    run = bm25_run(_chunked(frame, 512), QUERIES, depth=100)  # batches of 512: streaming
    pos = {d: i for i, d in enumerate(frame["id"])}
    for qid, text in zip(QUERIES["id"], QUERIES["text"], strict=True):
        tokens = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, return_ids=False,
                                show_progress=False)[0]
        mine = run[run["query-id"] == qid]
        if not tokens:
            assert mine.empty  # a query of stopwords only retrieves nothing
            continue
        scores = ref.get_scores(tokens)
        assert len(mine) == 100
        np.testing.assert_array_equal(mine["score"].to_numpy(),
                                      scores[[pos[d] for d in mine["corpus-id"]]])
        # the top 100 by score, ties by corpus-id descending (byte-wise)
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], _neg(frame["id"][i])))
        assert mine["corpus-id"].tolist() == [frame["id"][i] for i in order[:100]]
        assert mine["rank"].tolist() == list(range(1, 101))


def _neg(s: str) -> tuple:
    return tuple(-b for b in s.encode()) + (1,)


def test_batch_size_does_not_change_the_run():
    frame = _corpus(1500, seed=9)
    a = search(build_index(_chunked(frame, 100)), QUERIES, 50)
    b = search(build_index(_chunked(frame, 1500)), QUERIES, 50)
    pd.testing.assert_frame_equal(a, b)


def test_index_is_reused_for_the_same_corpus(monkeypatch):
    import rcp_data.building.bm25 as mod

    corpus = _chunked(_corpus(300), 100)
    calls = []
    real = mod.build_index
    monkeypatch.setattr(mod, "build_index", lambda c: calls.append(c) or real(c))
    mod.bm25_run(corpus, QUERIES.iloc[:1], 10)
    mod.bm25_run(corpus, QUERIES.iloc[1:], 10)
    assert len(calls) == 1


def test_empty_corpus_is_an_error():
    from rcp_data.core.errors import InputError

    with pytest.raises(InputError):
        build_index(_chunked(_corpus(10).iloc[:0], 10))


def test_spilled_index_in_many_slices_and_chunks_equals_bm25s_matrix(monkeypatch, tmp_path):
    """Slices of 97 documents and chunks of 1,000 postings (every boundary crossed) give bm25s'
    own score matrix, array for array; the spill folder is removed afterwards."""
    import rcp_data.building.bm25 as mod

    frame = _corpus(2500, seed=21)
    monkeypatch.setattr(mod, "SLICE_DOCS", 97)
    monkeypatch.setattr(mod, "CHUNK_POSTINGS", 1000)
    index = build_index(_chunked(frame, 400), spill_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []
    ref = bm25s.BM25(method=METHOD, k1=K1, b=B)
    tok = mod.make_tokenizer()
    ref.index(list(tok.streaming_tokenize(frame["text"].tolist(), allow_empty=False)),
              show_progress=False)
    mine = index.retriever.scores
    assert mine["indices"].dtype == np.int32 and mine["data"].dtype == np.float32
    assert len(mine["data"]) > 10 * 1000
    for key in ("indices", "data"):
        np.testing.assert_array_equal(mine[key], ref.scores[key])
    ref_ptr = ref.scores["indptr"]  # bm25s keeps one more, empty column
    np.testing.assert_array_equal(mine["indptr"], ref_ptr[:len(mine["indptr"])])
    assert set(ref_ptr[len(mine["indptr"]):]) == {len(mine["data"])}
