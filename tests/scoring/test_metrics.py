"""The nDCG engine: hand-worked tie rules, brute force for group-mean, pytrec_eval on real qrels."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from rcp_data.core.specs import load_spec
from rcp_data.scoring.metrics import (
    CandidateLayout,
    byte_order_key,
    dcg_at_k,
    ideal_dcg,
    ndcg_at_k,
    ndcg_at_k_blocks,
    ndcg_at_k_rules,
)


def d(rank: int) -> float:
    """Discount of a 1-based rank."""
    return 1.0 / math.log2(rank + 1)


# -- hand-worked ---------------------------------------------------------------------------------
# One query, pool order [c3, c1, c2, c10, c9]; scores tie c1/c2 (0.9) and c3/c9 (0.5).
IDS = ["c3", "c1", "c2", "c10", "c9"]
SCORES = np.array([0.5, 0.9, 0.9, 0.1, 0.5])
GAINS = np.array([0.1, 0.9, 0.5, 0.0, 0.2])
OFFS = np.array([0, 5])


def test_doc_id_rule_breaks_ties_by_corpus_id_descending_bytewise():
    # ranking: c2, c1 (tie 0.9, "c2" > "c1"), c9, c3 (tie 0.5, "c9" > "c3"), c10
    ideal = ideal_dcg(OFFS, GAINS, 3)
    got = ndcg_at_k(OFFS, SCORES, GAINS, ideal, k=3, tie_rule="doc-id",
                    doc_key=byte_order_key(IDS))
    dcg = 0.5 * d(1) + 0.9 * d(2) + 0.2 * d(3)
    assert ideal[0] == pytest.approx(0.9 * d(1) + 0.5 * d(2) + 0.2 * d(3), abs=1e-15)
    assert got[0] == pytest.approx(dcg / ideal[0], abs=1e-15)


def test_pool_order_rule_keeps_given_order_of_ties():
    # ranking: c1, c2 (pool order), c3, c9, c10
    ideal = ideal_dcg(OFFS, GAINS, 3)
    got = ndcg_at_k(OFFS, SCORES, GAINS, ideal, k=3, tie_rule="pool-order")
    assert got[0] == pytest.approx((0.9 * d(1) + 0.5 * d(2) + 0.1 * d(3)) / ideal[0], abs=1e-15)


def test_group_mean_credits_mean_gain_and_straddles_cutoff():
    # group {c1, c2} at ranks 1-2: mean 0.7; group {c3, c9} at ranks 3-4 straddles k = 3:
    # only rank 3 counts, with the group's mean gain 0.15
    ideal = ideal_dcg(OFFS, GAINS, 3)
    got = ndcg_at_k(OFFS, SCORES, GAINS, ideal, k=3, tie_rule="group-mean")
    dcg = 0.7 * d(1) + 0.7 * d(2) + 0.15 * d(3)
    assert got[0] == pytest.approx(dcg / ideal[0], abs=1e-15)


def test_cutoff_beyond_list_and_zero_ideal_and_empty_query():
    offs = np.array([0, 2, 2, 4])                 # query 1 has no candidates
    scores = np.array([2.0, 1.0, 1.0, 3.0])
    gains = np.array([0.0, 1.0, 0.0, 0.0])        # query 2 has no gain at all
    ideal = ideal_dcg(offs, gains, 10)
    assert ideal.tolist() == [1.0, 0.0, 0.0]
    for rule in ("doc-id", "group-mean", "pool-order"):
        got = ndcg_at_k(offs, scores, gains, ideal, k=10, tie_rule=rule,
                        doc_key=byte_order_key(["a", "b", "c", "d"]))
        assert got[0] == pytest.approx(d(2), abs=1e-15)
        assert got[1] == 0.0 and got[2] == 0.0


def test_ideal_counts_gains_outside_the_ranked_candidates():
    # the ideal can hold more gains than the ranking (positives outside the pool)
    ideal = ideal_dcg(np.array([0, 4]), np.array([1.0, 1.0, 1.0, -2.0]), 10)
    assert ideal[0] == pytest.approx(d(1) + d(2) + d(3), abs=1e-15)
    got = ndcg_at_k(np.array([0, 1]), np.array([0.3]), np.array([1.0]), ideal, k=10,
                    tie_rule="pool-order")
    assert got[0] == pytest.approx(1.0 / (d(1) + d(2) + d(3)), abs=1e-15)


def test_byte_order_key_is_bytewise_not_numeric_nor_locale():
    ids = ["9", "10", "B", "a", "é", "z", "10"]
    key = byte_order_key(ids)
    expected = sorted(set(ids), key=lambda s: s.encode("utf-8"))
    assert [expected.index(s) for s in ids] == key.tolist()
    assert key[1] < key[0]            # "10" < "9" as strings
    assert key[2] < key[3] < key[5] < key[4]


def test_runs_and_gain_sets_broadcast_like_single_calls():
    rng = np.random.default_rng(7)
    offs = np.array([0, 5, 12, 20])
    n = 20
    scores = rng.integers(0, 3, (4, n)).astype(float)
    gains = rng.random((2, n))
    key = byte_order_key([f"doc{i}" for i in rng.permutation(n)])
    ideal = ideal_dcg(offs, gains, 5)
    both = ndcg_at_k_rules(offs, scores, gains, ideal, k=5, tie_rules=("doc-id", "group-mean"),
                           doc_key=key)
    assert both["doc-id"].shape == (4, 2, 3)
    for r in range(4):
        for g in range(2):
            for rule in ("doc-id", "group-mean"):
                single = ndcg_at_k(offs, scores[r], gains[g], ideal[g], k=5, tie_rule=rule,
                                   doc_key=key)
                np.testing.assert_allclose(both[rule][r, g], single, rtol=0, atol=1e-15)
    pool = dcg_at_k(offs, scores, gains, k=5, tie_rules=("pool-order", "doc-id"), doc_key=key)
    assert set(pool) == {"pool-order", "doc-id"}


def test_layout_refuses_rule_it_cannot_apply():
    layout = CandidateLayout.build(np.array([0, 2]))
    with pytest.raises(ValueError, match="doc-id"):
        dcg_at_k(layout, np.array([1.0, 1.0]), np.array([1.0, 0.0]), tie_rules=("doc-id",))
    with pytest.raises(ValueError, match="doc_key"):
        dcg_at_k(np.array([0, 2]), np.array([1.0, 1.0]), np.array([1.0, 0.0]),
                 tie_rules=("doc-id",))
    with pytest.raises(ValueError, match="unknown tie rule"):
        dcg_at_k(np.array([0, 2]), np.array([1.0, 1.0]), np.array([1.0, 0.0]),
                 tie_rules=("random",))


# -- group-mean = brute force over all orders of each tie group ---------------------------------
def _brute_group_mean(scores: np.ndarray, gains: np.ndarray, k: int) -> float:
    """Mean DCG@k over every ordering of every tie group (ties ordered all possible ways)."""
    values = sorted(set(scores.tolist()), reverse=True)
    groups = [[i for i in range(len(scores)) if scores[i] == v] for v in values]
    total, count = 0.0, 0
    for combo in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranking = [i for group in combo for i in group]
        total += sum(gains[i] * d(r + 1) for r, i in enumerate(ranking[:k]))
        count += 1
    return total / count


def test_group_mean_equals_brute_force_over_permutations():
    rng = np.random.default_rng(20261129)
    sizes = rng.integers(1, 8, 40)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    n = int(offs[-1])
    scores = rng.integers(0, 3, n).astype(float)          # many ties
    gains = np.round(rng.random(n), 3)
    for k in (1, 2, 3, 5, 10):
        dcg = dcg_at_k(offs, scores, gains, k=k, tie_rules=("group-mean",))["group-mean"]
        for q in range(len(sizes)):
            sl = slice(offs[q], offs[q + 1])
            assert dcg[q] == pytest.approx(_brute_group_mean(scores[sl], gains[sl], k),
                                           abs=1e-12), (k, q)


# -- qrel-nDCG@10 under doc-id = pytrec_eval ndcg_cut_10 on the real TREC-DL qrels --------------
def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, grade = line.split()
        qrels.setdefault(qid, {})[doc] = int(grade)
    return qrels


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_qrel_ndcg_doc_id_equals_pytrec_eval_on_real_trecdl(trecdl_data: Path, year: str):
    import pytrec_eval  # a test dependency: its absence is a failure
    qrels = _read_qrels(trecdl_data / f"qrels.{year}-passage.txt")
    sub = load_spec("trecdl").subset({"dl19": "trec_dl_2019", "dl20": "trec_dl_2020"}[year])
    n_expected = (sub.upstream["queries"], sub.upstream["qrels"])
    assert (len(qrels), sum(len(v) for v in qrels.values())) == n_expected
    rng = np.random.default_rng({"dl19": 19, "dl20": 20}[year])
    extra = [str(x) for x in rng.choice(8_841_823, 3000, replace=False)]   # unjudged ids
    for _trial in range(3):
        qids, cand_ids, cand_scores, cand_gains, ideal_g, ideal_off = [], [], [], [], [], [0]
        run: dict[str, dict[str, float]] = {}
        for qid, judged in qrels.items():
            docs = list(judged)
            # leave some judged passages (positives too) out of the ranking: the ideal keeps them
            docs = [x for x in docs if rng.random() > 0.15]
            docs += list(rng.choice(extra, 30, replace=False))
            docs = list(dict.fromkeys(docs))
            scores = rng.integers(0, 6, len(docs)).astype(float)     # heavy ties
            qids.append(qid)
            cand_ids += docs
            cand_scores.append(scores)
            cand_gains += [max(judged.get(x, 0), 0) for x in docs]
            ideal_g += list(judged.values())
            ideal_off.append(len(ideal_g))
            run[qid] = {x: float(s) for x, s in zip(docs, scores, strict=True)}
        offs = np.concatenate([[0], np.cumsum([len(s) for s in cand_scores])])
        ideal = ideal_dcg(np.array(ideal_off), np.array(ideal_g, dtype=float), 10)
        ours = ndcg_at_k(offs, np.concatenate(cand_scores), np.array(cand_gains, dtype=float),
                         ideal, k=10, tie_rule="doc-id", doc_key=byte_order_key(cand_ids))
        ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
        theirs = np.array([ref[q]["ndcg_cut_10"] for q in qids])
        assert np.max(np.abs(ours - theirs)) <= 1e-12
        # the tie rule matters on these runs: pool order gives other numbers
        other = ndcg_at_k(offs, np.concatenate(cand_scores), np.array(cand_gains, dtype=float),
                          ideal, k=10, tie_rule="pool-order")
        assert np.max(np.abs(other - theirs)) > 1e-3


def test_engine_refuses_non_finite_values():
    with pytest.raises(ValueError, match="finite"):
        dcg_at_k(np.array([0, 2]), np.array([1.0, np.nan]), np.array([1.0, 0.0]),
                 tie_rules=("pool-order",))
    with pytest.raises(ValueError, match="finite"):
        dcg_at_k(np.array([0, 2]), np.array([1.0, 0.0]), np.array([np.inf, 0.0]),
                 tie_rules=("group-mean",))


def test_queries_without_any_candidate_score_zero():
    """Every query's candidate list empty (e.g. all excluded): nDCG 0, no crash."""
    offs = np.array([0, 0, 0])
    ideal = ideal_dcg(np.array([0, 1, 1]), np.array([0.7]), 10)
    assert ideal == pytest.approx([0.7, 0.0])
    got = ndcg_at_k_rules(offs, np.zeros((3, 0)), np.zeros((2, 0)), np.vstack([ideal, ideal]),
                          k=10, tie_rules=("doc-id", "group-mean", "pool-order"),
                          doc_key=byte_order_key([]))
    for rule, values in got.items():
        assert values.shape == (3, 2, 2), rule
        assert not values.any(), rule


def test_gain_blocks_share_one_sort_and_equal_separate_calls_bit_for_bit():
    # ties (scores rounded to one decimal), several runs, three rules; a two-row block and a
    # one-dimensional block (the exponential gain of the grades): each block's values are
    # exactly those of ndcg_at_k_rules on that block alone, and the hand-worked example's
    rng = np.random.default_rng(7)
    offsets = np.array([0, 5, 17, 17, 30, 42])
    n = int(offsets[-1])
    ids = [f"d{i}" for i in rng.permutation(n)]
    key = byte_order_key(ids)
    scores = np.round(rng.random((4, n)), 1)
    grades = rng.integers(0, 4, size=n).astype(float)
    linear = np.vstack([rng.random(n), grades])
    exp = np.exp2(grades) - 1.0
    rules = ["doc-id", "group-mean", "pool-order"]
    blocks = [(linear, ideal_dcg(offsets, linear, 10)), (exp, ideal_dcg(offsets, exp, 10))]
    got = ndcg_at_k_blocks(offsets, scores, blocks, k=10, tie_rules=rules, doc_key=key)
    for (gains, ideal), res in zip(blocks, got, strict=True):
        alone = ndcg_at_k_rules(offsets, scores, gains, ideal, k=10, tie_rules=rules,
                                doc_key=key)
        for rule in rules:
            assert res[rule].shape == alone[rule].shape
            assert np.array_equal(res[rule], alone[rule])
    assert got[1]["doc-id"].shape == (4, 5)
    hand = ndcg_at_k_blocks(OFFS, SCORES, [(GAINS, ideal_dcg(OFFS, GAINS, 3))], k=3,
                            tie_rules=["doc-id"], doc_key=byte_order_key(IDS))[0]["doc-id"]
    ideal = GAINS[1] * d(1) + GAINS[2] * d(2) + GAINS[4] * d(3)   # sorted gains .9 .5 .2
    assert hand == pytest.approx((GAINS[2] * d(1) + GAINS[1] * d(2) + GAINS[4] * d(3)) / ideal)
