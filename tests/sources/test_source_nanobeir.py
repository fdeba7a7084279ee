"""NanoBEIR reader on SYNTHETIC nano-beir cache files, read through ir_datasets for real."""

from __future__ import annotations

import pandas as pd
import pytest
from support.nanobeir_fixtures import DATASETS, make_all, make_dataset, stage

from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec
from rcp_data.sources import irds, irds_cache
from rcp_data.sources.nanobeir import read_nanobeir, self_argument_exclusions

pytestmark = pytest.mark.usefixtures("irds_home")


@pytest.fixture(scope="module")
def staged(irds_home):
    fixtures = make_all()
    stage(fixtures)
    return fixtures


@pytest.fixture(scope="module")
def suite(staged):
    return read_nanobeir()


def _name_of(dataset: str) -> str:
    spec = load_spec("nanobeir")
    return next(s.name for s in spec.subsets if s.source == f"nano-beir/{dataset}")


def test_spec_lists_the_13_irds_datasets():
    spec = load_spec("nanobeir")
    assert sorted(s.source for s in spec.subsets) == sorted(f"nano-beir/{d}" for d in DATASETS)
    assert all(s.name == f"{s.task}Retrieval" for s in spec.subsets)


def test_staged_files_sit_where_ir_datasets_reads_them(staged):
    import ir_datasets

    path = irds_cache.cache_path("nano-beir", "arguana/docs")
    assert path.name == "corpus.parquet" and path.parent.name == "arguana"
    assert path.exists()
    # ir_datasets itself reads the staged rows
    ids = [d.doc_id for d in ir_datasets.load("nano-beir/arguana").docs_iter()]
    assert ids == staged["arguana"].corpus["_id"].tolist()


def test_tables_match_upstream(staged, suite):
    spec = load_spec("nanobeir")
    assert list(suite.subsets) == spec.subset_names
    for dataset, fx in staged.items():
        sub = suite.subsets[_name_of(dataset)]
        assert sub.queries["id"].tolist() == fx.queries["_id"].tolist()
        assert sub.queries["text"].tolist() == fx.queries["text"].tolist()
        got = set(zip(sub.qrels["query-id"], sub.qrels["corpus-id"], strict=True))
        want = set(zip(fx.qrels["query-id"], fx.qrels["corpus-id"], strict=True))
        assert got == want
        assert (sub.qrels["score"] == 1).all()
        corpus = sub.corpus.to_frame()
        assert corpus.columns.tolist() == ["id", "title", "text"]
        assert corpus["id"].tolist() == fx.corpus["_id"].tolist()
        assert corpus["text"].tolist() == fx.corpus["text"].tolist()
        assert (corpus["title"] == "").all()
        assert sub.corpus.size == len(fx.corpus)
    assert suite.facts["queries"] == sum(len(f.queries) for f in staged.values())


def test_self_argument_rule_finds_same_id_and_copied_id(staged, suite):
    fx = staged["arguana"]
    sub = suite.subsets["NanoArguAnaRetrieval"]
    got = dict(zip(sub.excluded["query-id"], sub.excluded["excluded-corpus-ids"], strict=True))
    assert {q: list(v) for q, v in got.items()} == fx.excluded
    assert sub.notes["self_argument_queries"] == len(fx.excluded)
    assert sub.notes["self_argument_same_id"] == 3
    assert sub.notes["self_argument_copies"] == 3
    assert sub.notes["self_argument_positive_kept"] == 1
    # no exclusion is ever a qrel positive
    pos = set(zip(sub.qrels["query-id"], sub.qrels["corpus-id"], strict=True))
    assert not any((q, d) in pos for q, ids in got.items() for d in ids)
    # only the subset whose spec names the rule gets exclusions
    others = [s for n, s in suite.subsets.items() if n != "NanoArguAnaRetrieval"]
    assert all(s.excluded is None for s in others)


def test_self_argument_rule_hand_worked():
    queries = pd.DataFrame({"id": ["a", "b", "c"], "text": ["x", "y", ""]})
    corpus = pd.DataFrame({"id": ["a", "a2", "b-copy", "e1", "e2", "z"],
                           "text": ["x", "x", "y", "", "", "x"]})
    table, counts = self_argument_exclusions(queries, corpus,
                                             pd.DataFrame({"query-id": ["a"], "corpus-id": ["z"]}))
    assert dict(zip(table["query-id"], table["excluded-corpus-ids"], strict=True)) == {
        "a": ["a", "a2"], "b": ["b-copy"]}
    assert counts == {"self_argument_queries": 2, "self_argument_same_id": 1,
                      "self_argument_copies": 2, "self_argument_positive_kept": 1}


def test_empty_documents_are_reported(staged, suite):
    sci = suite.subsets["NanoSCIDOCSRetrieval"]
    assert sci.notes["empty_ids"] == staged["scidocs"].empty_ids
    assert sci.notes["empty_documents"] == 3
    assert sci.notes["empty_positive_documents"] == 1
    arg = suite.subsets["NanoArguAnaRetrieval"]
    assert arg.notes["empty_ids"] == ["empty-a", "empty-b"]
    plain = suite.subsets["NanoFEVERRetrieval"]
    assert plain.notes["empty_documents"] == 0 and plain.notes["empty_ids"] == []
    assert suite.facts["empty_documents"] == 5


def test_corpus_streams_in_batches(staged, suite):
    sub = suite.subsets["NanoQuoraRetrieval"]
    scan = irds.scan_corpus(irds.load("nano-beir/quora"), "nano-beir/quora", "x")
    reader = irds.corpus_reader("nano-beir/quora", scan, batch_rows=7)
    sizes = [b.num_rows for b in reader.batches()]
    n = len(staged["quora"].corpus)
    assert sizes == [7] * (n // 7) + ([n % 7] if n % 7 else [])
    assert reader.to_frame()["id"].tolist() == sub.corpus.to_frame()["id"].tolist()


def _restage(dataset: str, **tables) -> None:
    fx = make_dataset(dataset)
    frames = {"corpus": fx.corpus, "queries": fx.queries, "qrels": fx.qrels, **tables}
    irds_cache.stage_nanobeir(dataset, **frames)


def test_exact_repeats_are_folded_and_counted():
    fx = make_dataset("nq")
    corpus = pd.concat([fx.corpus, fx.corpus.iloc[[3, 5]]], ignore_index=True)
    qrels = pd.concat([fx.qrels, fx.qrels.iloc[[0]]], ignore_index=True)
    _restage("nq", corpus=corpus, qrels=qrels)
    sub = read_nanobeir(subsets=["NanoNQRetrieval"]).subsets["NanoNQRetrieval"]
    assert sub.notes["document_repeats"] == 2
    assert sub.notes["qrel_repeats"] == 1
    assert sub.corpus.to_frame()["id"].tolist() == fx.corpus["_id"].tolist()
    assert len(sub.qrels) == len(fx.qrels)


def test_duplicate_document_id_with_other_text_is_an_error():
    fx = make_dataset("nq")
    bad = pd.concat([fx.corpus, pd.DataFrame({"_id": [fx.corpus["_id"].iloc[4]],
                                              "text": ["SYNTHETIC other text"]})],
                    ignore_index=True)
    _restage("nq", corpus=bad)
    with pytest.raises(InputError) as err:
        read_nanobeir(subsets=["NanoNQRetrieval"])
    msg = str(err.value)
    assert "corpus.parquet" in msg and repr(fx.corpus["_id"].iloc[4]) in msg
    assert f"rows 5 and {len(bad)}" in msg


def test_duplicate_query_id_with_other_text_is_an_error():
    fx = make_dataset("nq")
    bad = pd.concat([fx.queries, pd.DataFrame({"_id": [fx.queries["_id"].iloc[1]],
                                               "text": ["SYNTHETIC changed"]})],
                    ignore_index=True)
    _restage("nq", queries=bad)
    with pytest.raises(InputError, match=r"queries\.parquet.*row 5.*appears twice"):
        read_nanobeir(subsets=["NanoNQRetrieval"])


def test_qrel_naming_a_missing_document_is_an_error():
    fx = make_dataset("nq")
    bad = pd.concat([fx.qrels, pd.DataFrame([(fx.queries["_id"].iloc[0], "nowhere", 1)],
                                            columns=fx.qrels.columns)], ignore_index=True)
    _restage("nq", qrels=bad)
    with pytest.raises(InputError, match=r"qrels\.parquet.*'nowhere'.*not in the corpus"):
        read_nanobeir(subsets=["NanoNQRetrieval"])


def test_missing_upstream_file_is_an_input_error(monkeypatch):
    _restage("nq")
    irds_cache.cache_path("nano-beir", "nq/queries").unlink()
    # keep ir_datasets from trying the network: its downloader fails at once
    import ir_datasets.util.download as dl

    def _refuse(self):
        raise ConnectionError("offline test")

    monkeypatch.setattr(dl.RequestsDownload, "stream", _refuse)
    with pytest.raises(InputError, match=r"queries.*nano-beir/nq.*offline"):
        read_nanobeir(subsets=["NanoNQRetrieval"])


# -- phase 2: ``rcp-data build nanobeir`` through the shared stages (SYNTHETIC judge inputs) ---
def test_cli_build_nanobeir(tmp_path):
    from support.nanobeir_fixtures import MANY_POSITIVES

    from rcp_data import cli
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.model.release import Release
    from rcp_data.sources.nanobeir import read_suite

    fixtures = make_all()
    stage(fixtures)
    spec = load_spec("nanobeir")
    write_synthetic_inputs(spec, read_suite(spec, {"allow_download": "0"}), tmp_path / "inputs")
    rc = cli.main(["build", "nanobeir", "--inputs", str(tmp_path / "inputs"), "--out",
                   str(tmp_path / "release"), "--source-option", "allow_download=0",
                   "--repo", "rcp-test/nanobeir-synthetic"])
    assert rc == 0
    rel = Release(tmp_path / "release", spec)
    for dataset, fx in fixtures.items():
        name = _name_of(dataset)
        pool = rel.provenance("pool", name)
        qrels = rel.table(name, "qrels")
        assert (pool.groupby("query-id").size() == spec.pool.size).all(), name
        positives = fx.qrels.groupby("query-id")["corpus-id"].agg(set)
        pooled = pool.groupby("query-id")["corpus-id"].agg(set)
        for q, pos in positives.items():
            empty = pos & set(fx.empty_ids)
            assert not (pooled[q] & set(fx.empty_ids))          # empty documents never pooled
            if len(pos - empty) <= spec.pool.size:
                assert pos - empty <= pooled[q], (name, q)      # every positive inside
            else:
                assert pooled[q] <= pos                          # all 150 places are positives
        outside = qrels[qrels["theta"].isna()]
        assert (outside["score"] > 0).all()
        want_outside = fx.empty_positives + (MANY_POSITIVES - spec.pool.size
                                             if dataset == "nfcorpus" else 0)
        assert len(outside) == want_outside, name
    exc = rel.table("NanoArguAnaRetrieval", "excluded")
    got = dict(zip(exc["query-id"], map(sorted, exc["excluded-corpus-ids"]), strict=True))
    assert got == {q: sorted(v) for q, v in fixtures["arguana"].excluded.items()}
    top = rel.table("NanoArguAnaRetrieval", "top_ranked")
    for q, ids in zip(top["query-id"], top["corpus-ids"], strict=True):
        assert not set(ids) & set(got.get(q, []))
    assert not rel.has("NanoSCIDOCSRetrieval", "excluded")
    _replay_matches_trec_eval(tmp_path / "release", spec, "NanoArguAnaRetrieval")


def _replay_matches_trec_eval(root, spec, subset: str) -> None:
    """qrel-nDCG@10 of ``rcp-data replay`` (doc-id ties) equals pytrec_eval's on the runs cut to
    each query's candidates, i.e. with the excluded self-arguments removed."""
    import numpy as np
    import pytrec_eval

    from rcp_data.model.release import Release
    from rcp_data.scoring.replay import replay_release

    got = replay_release(root, spec, k=10, tie_rule="doc-id").to_json()["metrics"]["qrel_ndcg"]
    rel = Release(root, spec)
    qrels = rel.table(subset, "qrels")
    qrel = {}
    for q, d, g in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"], strict=True):
        qrel.setdefault(q, {})[d] = int(g)
    top = rel.table(subset, "top_ranked")
    cand = {q: set(ids) for q, ids in zip(top["query-id"], top["corpus-ids"], strict=True)}
    runs = rel.provenance("runs", subset)
    runs = runs[~runs["is_judge"]]
    assert set(got) == set(runs["model"].unique())
    for model, frame in runs.groupby("model"):
        run = {}
        for q, d, sc in zip(frame["query-id"], frame["corpus-id"], frame["score"], strict=True):
            if d in cand[q]:
                run.setdefault(q, {})[d] = float(sc)
        ev = pytrec_eval.RelevanceEvaluator(qrel, {"ndcg_cut.10"}).evaluate(run)
        want = np.mean([v["ndcg_cut_10"] for v in ev.values()])
        assert got[model][subset] == pytest.approx(want, abs=1e-12), model


def test_read_suite_options():
    from rcp_data.core.errors import UsageError
    from rcp_data.sources.nanobeir import read_suite

    spec = load_spec("nanobeir")
    with pytest.raises(UsageError, match="unknown NanoBEIR source option"):
        read_suite(spec, {"bogus": "1"})
    _restage("nq")
    got = read_suite(spec, {"subsets": "NanoNQRetrieval", "allow_download": "0"})
    assert list(got.subsets) == ["NanoNQRetrieval"]
    irds_cache.cache_path("nano-beir", "nq/qrels").unlink()
    with pytest.raises(InputError, match=r"nq/qrels\.parquet.*not in the ir_datasets cache"):
        read_suite(spec, {"subsets": "NanoNQRetrieval", "allow_download": "0"})
