"""The agreement statistics against independent computations (scipy, statsmodels, the PyPI
``rbo`` package) on SYNTHETIC arrays."""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import rbo
from scipy import stats
from statsmodels.stats.multitest import multipletests

from rcp_data.scoring.agreement import labels as lab
from rcp_data.scoring.agreement import rankings as rk
from rcp_data.scoring.agreement.bootstrap import query_weights
from rcp_data.scoring.agreement.variation import draw_assessors, label_variation


def _graded(seed: int, n_q: int = 9):
    """SYNTHETIC graded documents: per query 5-30 documents, grades 0-3, scores with ties."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 30, n_q)
    q = np.repeat(np.arange(n_q), sizes)
    grade = rng.integers(0, 4, len(q))
    score = np.round(grade + rng.normal(0, 1.2, len(q)), 1)        # rounding makes ties
    return score, grade, q


def _concordance_by_u(score, grade, q):
    """Within-query concordance from scipy's Mann-Whitney U per query and grade pair."""
    wins = pairs = 0.0
    for qq in np.unique(q):
        s, g = score[q == qq], grade[q == qq]
        levels = np.unique(g)
        for i, a in enumerate(levels):
            for b in levels[:i]:
                x, y = s[g == a], s[g == b]
                wins += stats.mannwhitneyu(x, y).statistic
                pairs += len(x) * len(y)
    return wins / pairs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_concordance_equals_mann_whitney(seed):
    score, grade, q = _graded(seed)
    c = lab.concordance(score, grade, q)
    assert c.rate == pytest.approx(_concordance_by_u(score, grade, q), abs=1e-12)
    # the grades themselves are perfectly concordant; ties of the score count 1/2
    assert lab.concordance(grade, grade, q).rate == 1.0
    assert lab.concordance(np.zeros(len(q)), grade, q).rate == 0.5


def test_concordance_interval_equals_explicit_resamples():
    score, grade, q = _graded(3)
    w = query_weights(q.max() + 1, resamples=6, seed=5)
    iv = lab.concordance(score, grade, q).with_interval(w)
    explicit = []
    for row in w:
        picks = np.repeat(np.arange(len(row)), row.astype(int))
        idx = np.concatenate([np.flatnonzero(q == p) for p in picks])
        newq = np.concatenate([np.full((q == p).sum(), j) for j, p in enumerate(picks)])
        explicit.append(_concordance_by_u(score[idx], grade[idx], newq))
    lo, hi = np.quantile(explicit, [0.025, 0.975])
    assert (iv.lo, iv.hi) == pytest.approx((lo, hi), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 4])
def test_pooled_auc_equals_mann_whitney_and_its_resamples(seed):
    score, grade, q = _graded(seed)
    pos = grade >= 2
    auc = lab.pooled_auc(score, pos, q)
    u = stats.mannwhitneyu(score[pos], score[~pos]).statistic
    assert auc.value == pytest.approx(u / (pos.sum() * (~pos).sum()), abs=1e-12)
    w = query_weights(q.max() + 1, resamples=5, seed=1)
    iv = auc.with_interval(w)
    explicit = []
    for row in w:
        idx = np.concatenate([np.flatnonzero(q == p)
                              for p in np.repeat(np.arange(len(row)), row.astype(int))])
        s, p_ = score[idx], pos[idx]
        explicit.append(stats.mannwhitneyu(s[p_], s[~p_]).statistic / (p_.sum() * (~p_).sum()))
    assert (iv.lo, iv.hi) == pytest.approx(tuple(np.quantile(explicit, [0.025, 0.975])),
                                           abs=1e-12)


def test_pooled_spearman_ceiling_and_floor():
    score, grade, q = _graded(5)
    res = lab.pooled_spearman(score, grade, q, floor_shuffles=5)
    assert res.observed.value == pytest.approx(stats.spearmanr(score, grade).statistic, abs=1e-12)
    # ceiling, independently: each query's sorted values handed out in grade order (pandas)
    frame = pd.DataFrame({"q": q, "g": grade, "s": score})
    parts = []
    for _, grp in frame.groupby("q"):
        grp = grp.sort_values("g", kind="stable").copy()
        grp["c"] = np.sort(grp["s"].to_numpy())
        parts.append(grp)
    ceil = pd.concat(parts)
    assert res.ceiling == pytest.approx(stats.spearmanr(ceil["c"], ceil["g"]).statistic,
                                        abs=1e-12)
    assert res.floor < res.observed.value <= res.ceiling
    # a shuffle keeps each query's values
    shuf = lab.shuffled_within(score, q, np.random.default_rng(0))
    for qq in np.unique(q):
        assert sorted(shuf[q == qq]) == sorted(score[q == qq])


def test_weighted_spearman_equals_repeated_documents():
    score, grade, _ = _graded(6)
    rng = np.random.default_rng(0)
    w = rng.integers(0, 3, size=(3, len(score))).astype(float)
    got = lab.weighted_spearman(score, grade, w)
    for b in range(3):
        rep = w[b].astype(int)
        ref = stats.spearmanr(np.repeat(score, rep), np.repeat(grade, rep)).statistic
        assert got[b] == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_leaderboard_correlations_equal_scipy_and_rbo(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(14), 1)                                   # with ties
    y = np.round(x + rng.normal(0, 0.2, 14), 1)
    assert rk.kendall_tau_b(x, y) == pytest.approx(
        stats.kendalltau(x, y, variant="b").statistic, abs=1e-12)
    assert rk.spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    a, b = list(rk.order(x)), list(rk.order(y))
    for p in (0.5, 0.9, 1.0):
        assert rk.rbo_package(a, b, p) == pytest.approx(
            rbo.RankingSimilarity(a, b).rbo(p=p), abs=1e-12)
    for p in (0.5, 0.9, 0.98):
        assert rk.rbo_extrapolated(a, b, p) == pytest.approx(
            rbo.RankingSimilarity(a, b).rbo_ext(p=p), abs=1e-12)
    # rows at once (bootstrap resamples) equal one at a time
    many = np.vstack([x, y, x[::-1]])
    assert np.allclose(rk.kendall_tau_b(many, y), [rk.kendall_tau_b(r, y) for r in many])


def test_rbo_variants_on_identical_leaderboards():
    same = list(range(6))
    assert rk.rbo_package(same, same, 0.9) == pytest.approx(1 - 0.9 ** 6, abs=1e-12)
    assert rk.rbo_package(same, same, 0.9) == pytest.approx(
        rbo.RankingSimilarity(same, same).rbo(p=0.9), abs=1e-12)
    assert rk.rbo_extrapolated(same, same, 0.9) == pytest.approx(1.0, abs=1e-12)
    assert rk.rbo_package(same, same, 1.0) == 1.0


def test_separation_equals_ttest_rel_and_multipletests():
    rng = np.random.default_rng(2)
    v = rng.random((30, 6)) + np.linspace(0, 0.3, 6)
    v[4, 2] = np.nan                                     # a query the metric leaves out
    sep = rk.separation(v)
    keep = ~np.isnan(v).any(axis=1)
    idx = rk.pair_index(6)
    ref = [stats.ttest_rel(v[keep, i], v[keep, j]).pvalue for i, j in idx]
    assert np.allclose(sep.pvalue, ref, atol=1e-12)
    assert rk.sensitivity(sep).value == np.mean(np.asarray(ref) < 0.05)
    for method in ("bonferroni", "holm"):
        adj = rk.separation(v, correction=method)
        ok, p_adj, _, _ = multipletests(ref, alpha=0.05, method=method)
        assert np.allclose(adj.pvalue, p_adj, atol=1e-12)
        assert (adj.separated == ok).all()
    # per bootstrap resample: the t-test of the repeated queries
    w = query_weights(30, resamples=4, seed=3)
    sb = rk.separation(v, weights=w)
    for b in range(4):
        rows = np.repeat(np.flatnonzero(keep), w[b, keep].astype(int))
        p_b = np.array([stats.ttest_rel(v[rows, i], v[rows, j]).pvalue for i, j in idx])
        assert (sb.sample_separated[b] == (p_b < 0.05)).all()


def test_decisive_agreement_and_failure_modes():
    v = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [0.5, 0.5, 0.2], [0.9, 0.5, 0.1],
                  [np.nan, 0.3, 0.2]])
    modes = rk.failure_modes(v)
    assert modes["saturates"].tolist() == [True, False, False, False, False]
    assert modes["floors"].tolist() == [False, True, False, False, False]
    # 0.5, 0.5, 0.2: one of three pairs ties (< half) -> not compressed
    assert modes["compresses"].tolist() == [False] * 5
    v[2] = [0.5, 0.5, 0.5 + 5e-7]                      # ties within 1e-6: compressed
    assert rk.failure_modes(v)["compresses"].tolist() == [False, False, True, False, False]
    shares = rk.failure_shares(rk.failure_modes(v))
    assert shares["any"].value == 3 / 4                 # the NaN query is left out
    rng = np.random.default_rng(0)
    ref = rng.random((40, 4)) + np.array([0.0, 0.2, 0.4, 0.6])
    flipped = ref[:, ::-1]
    r_sep, f_sep = rk.separation(ref), rk.separation(flipped)
    same = rk.decisive_agreement(r_sep, r_sep)
    assert same.agree == same.decisive > 0
    assert rk.decisive_agreement(f_sep, r_sep).agree == 0


def test_label_variation_copy_never_swaps_and_equals_a_loop():
    rng = np.random.default_rng(1)
    n_s, n_q = 5, 12
    ref = rng.random((n_s, n_q)) + np.linspace(0, 0.5, n_s)[:, None]
    noisy = ref + rng.normal(0, 0.3, ref.shape)
    other = rng.random((n_s, n_q))
    values = np.stack([ref, noisy, other])                             # (A, S, Q)
    board = ref.mean(axis=1)
    only_copy = np.zeros((3, n_q), dtype=bool)
    only_copy[0] = True
    var = label_variation(values, board, available=only_copy, draws=200)
    assert var.swap.max() == 0 and var.swap_vs_reference.max() == 0
    assert (var.kendall == 1).all() and (var.spearman == 1).all()
    assert np.allclose(var.rbo_ext, 1.0)
    # every assessor drawn: the per-draw statistics equal an explicit loop with scipy
    var = label_variation(values, board, draws=50, seed=4, chunk=7)
    who = draw_assessors(np.ones((3, n_q), dtype=bool), 50, 4)
    idx = rk.pair_index(n_s)
    against = np.zeros(len(idx))
    for d in range(50):
        drawn = np.array([[values[who[d, q], s, q] for q in range(n_q)] for s in range(n_s)])
        b = drawn.mean(axis=1)
        assert var.kendall[d] == pytest.approx(stats.kendalltau(b, board).statistic, abs=1e-12)
        assert var.spearman[d] == pytest.approx(stats.spearmanr(b, board).statistic, abs=1e-12)
        assert var.rbo[d] == pytest.approx(rbo.RankingSimilarity(
            list(rk.order(b)), list(rk.order(board))).rbo(p=0.9), abs=1e-12)
        against += [np.sign(b[i] - b[j]) != np.sign(board[i] - board[j]) for i, j in idx]
    assert np.allclose(var.swap_vs_reference, against / 50)
    assert (var.swap <= 0.5).all()


def test_concordance_equals_a_pair_loop():
    score, grade, q = _graded(7)
    agree = pairs = 0.0
    for i, j in combinations(range(len(q)), 2):
        if q[i] != q[j] or grade[i] == grade[j]:
            continue
        pairs += 1
        agree += 0.5 if score[i] == score[j] else float(
            (score[i] - score[j]) * (grade[i] - grade[j]) > 0)
    assert lab.concordance(score, grade, q).rate == pytest.approx(agree / pairs, abs=1e-15)
    assert lab.concordance(grade.astype(float), grade, q).rate == 1.0
    assert lab.concordance(-grade.astype(float), grade, q).rate == 0.0


def test_pooled_spearman_floor_is_near_zero():
    score, grade, q = _graded(3, n_q=12)
    res = lab.pooled_spearman(score, grade, q)
    assert res.floor < res.observed.value < res.ceiling
    assert abs(res.floor) < 0.2              # shuffling within queries leaves little


def test_saturation_is_an_exact_one_and_a_near_one_compresses():
    # G.1: saturates when every system scores 1 (exactly); 1e-6 is the tie of compresses only
    v = np.array([[1.0, 1.0, 1.0], [1 - 5e-7, 1 - 5e-7, 1.0], [0.0, 0.0, 0.0]])
    modes = rk.failure_modes(v)
    assert modes["saturates"].tolist() == [True, False, False]
    assert modes["compresses"].tolist() == [False, True, False]
    assert modes["floors"].tolist() == [False, False, True]


def test_leaderboard_intervals_equal_explicit_resamples():
    rng = np.random.default_rng(5)
    strata = [rng.random((20, 3)), rng.random((35, 3))]
    ci = rk.leaderboard_intervals(strata, resamples=300, seed=4)
    means = np.mean([s.mean(axis=0) for s in strata], axis=0)
    assert ci.shape == (3, 2) and np.all(ci[:, 0] < means) and np.all(means < ci[:, 1])
    # independently: the same query multiplicities, each resample's queries repeated
    w = query_weights(55, resamples=300, seed=4, strata=np.repeat([0, 1], [20, 35]))
    boot = np.array([np.mean([np.repeat(strata[0], w[b, :20].astype(int), axis=0).mean(0),
                              np.repeat(strata[1], w[b, 20:].astype(int), axis=0).mean(0)],
                             axis=0) for b in range(300)])
    assert np.allclose(ci, np.percentile(boot, [2.5, 97.5], axis=0).T, atol=1e-12)
    assert rk.leaderboard_intervals([]).shape == (0, 2)


def test_count_share_reads_the_verdicts_as_count_ndcg_does():
    # window (q, call 0) answers everything; (q, call 1) misses C2 for b: the reading rule
    # leaves that window out, so a and b gain from call 0 alone (Eq. 5 over read windows)
    crit = pd.DataFrame({"query-id": ["q", "q", "q", "q"], "call_index": [0, 0, 1, 1],
                         "corpus-id": ["a", "b", "a", "b"], "C1": [1, 1, 0, 1],
                         "C2": [1, 0, 1, None]})
    out = lab.count_share(crit).set_index("corpus-id")["count"]
    assert out["a"] == 2 / 2 and out["b"] == 1 / 2
    crit.loc[3, "C2"] = 0                                  # now both windows are read
    out = lab.count_share(crit).set_index("corpus-id")["count"]
    assert out["a"] == 3 / 4 and out["b"] == 2 / 4


@pytest.mark.parametrize("seed", [1, 6])
def test_pooled_auc_pair_matrix_equals_mann_whitney_per_query_pair(seed):
    score, grade, q = _graded(seed)
    score = np.round(score, 1)                                  # ties across queries
    pos = grade >= 1
    auc = lab.pooled_auc(score, pos, q)
    for q1, q2 in np.ndindex(auc.wins.shape):
        a, b = score[pos & (q == q1)], score[~pos & (q == q2)]
        want = stats.mannwhitneyu(a, b).statistic if len(a) and len(b) else 0.0
        assert auc.wins[q1, q2] == want


def test_midranks_equal_scipy_rankdata():
    rng = np.random.default_rng(2)
    for x in (np.round(rng.normal(size=500), 1), rng.integers(0, 3, 40).astype(float),
              np.array([2.0]), np.array([]), np.array([1.0, np.nan, 0.0])):
        np.testing.assert_array_equal(lab.midranks(x), stats.rankdata(x))


def test_pooled_spearman_floor_is_the_mean_of_explicit_shuffles():
    score, grade, q = _graded(3)
    res = lab.pooled_spearman(score, grade, q, seed=11, floor_shuffles=7)
    rng = np.random.default_rng(11)
    ranks = stats.rankdata(score)
    want = np.mean([stats.spearmanr(lab.shuffled_within(ranks, q, rng), grade).statistic
                    for _ in range(7)])
    assert res.floor == pytest.approx(want, abs=1e-12)


def test_query_weights_count_the_seeded_draws():
    w = query_weights(7, resamples=50, seed=9, strata=np.array([0, 1, 0, 1, 1, 0, 1]))
    rng = np.random.default_rng(9)
    for members in (np.array([0, 2, 5]), np.array([1, 3, 4, 6])):
        draws = rng.integers(0, len(members), size=(50, len(members)))
        for b in range(50):
            np.testing.assert_array_equal(
                w[b, members], np.bincount(draws[b], minlength=len(members)))


@pytest.mark.parametrize("how", ["inner", "left"])
def test_integer_key_join_keeps_merge_order(how):
    from rcp_data.scoring.agreement.analysis import _join

    rng = np.random.default_rng(4)
    left = rng.integers(0, 30, 200)
    for right in (rng.permutation(25), rng.integers(0, 25, 60)):     # unique, duplicates
        li, ri = _join(left, right, how)
        m = pd.DataFrame({"key": left, "l": np.arange(200)}).merge(
            pd.DataFrame({"key": right, "r": np.arange(len(right))}), how=how, on="key")
        np.testing.assert_array_equal(li, m["l"].to_numpy())
        np.testing.assert_array_equal(ri, m["r"].fillna(-1).to_numpy(np.int64))


def test_paired_t_pvalues_equal_ttest_rel_bit_for_bit():
    """The t-test without scipy.stats: scipy's p-values exactly, ties, constant differences
    (t infinite or undefined), 0, 1 and 2 queries, and no pair included."""
    rng = np.random.default_rng(11)
    cases = []
    for _ in range(60):
        q, s = int(rng.integers(2, 300)), int(rng.integers(2, 12))
        v = np.round(rng.random((q, s)), int(rng.integers(1, 4)))    # rounding makes ties
        v[:, 1] = v[:, 0] + 0.25                                  # a constant difference
        v[:, -1] = v[:, 0]                                          # no difference at all
        cases.append(v)
    cases += [rng.random((n, 4)) for n in (0, 1, 2)] + [rng.random((5, 1))]
    for v in cases:
        idx = rk.pair_index(v.shape[1])
        a, b = v[:, idx[:, 0]], v[:, idx[:, 1]]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")               # scipy's precision-loss notes
            want = stats.ttest_rel(a, b, axis=0).pvalue
        got = rk.paired_t_pvalues(a, b)
        assert got.shape == np.shape(want)
        np.testing.assert_array_equal(got, want)          # NaN where scipy gives NaN
    assert rk.separation(cases[0]).separated[0]           # p = 0 for a constant difference


@pytest.mark.parametrize("seed", [3, 8])
def test_pooled_auc_from_one_sort_equals_the_pair_matrix_and_scipy_with_ties(seed):
    """The value from one sort of the negatives: exactly the old pair-matrix computation's
    (``wins.sum()`` over the same denominator) and scipy's Mann-Whitney U, on integer scores
    (ties within and across queries, between positives and negatives)."""
    rng = np.random.default_rng(seed)
    n_q = 40
    q = np.repeat(np.arange(n_q), rng.integers(1, 60, n_q))
    grade = rng.integers(0, 3, len(q))
    score = rng.integers(0, 6, len(q)).astype(float) + (grade > 0)
    for pos in (grade >= 1, grade >= 2, np.zeros(len(q), bool), np.ones(len(q), bool)):
        auc = lab.pooled_auc(score, pos, q)
        den = auc.positives.sum() * auc.negatives.sum()
        if not den:
            assert np.isnan(auc.value)
            continue
        assert auc.u == auc.wins.sum()                          # integer counts: exact
        assert auc.value == float(auc.wins.sum() / den)        # bit for bit
        u = stats.mannwhitneyu(score[pos], score[~pos]).statistic
        assert auc.u == u
        assert auc.value == pytest.approx(u / den, abs=1e-12)
    # the queries' own counts; a larger n_queries pads with empty queries
    auc = lab.pooled_auc(score, grade >= 1, q, n_q + 2)
    assert auc.wins.shape == (n_q + 2, n_q + 2) and auc.positives[-2:].sum() == 0
    np.testing.assert_array_equal(auc.positives[:n_q], np.bincount(q[grade >= 1], minlength=n_q))


def test_agreement_statistics_do_not_import_scipy_stats():
    """The statistics verify recomputes (concordance, AUC, Spearman, t-test separation,
    Kendall, failure modes) run without importing scipy.stats (about 1 s cold)."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from rcp_data.checks import paper_agreement\n"
            "from rcp_data.scoring.agreement import labels as lab, rankings as rk\n"
            "r = np.random.default_rng(0); q = np.repeat(np.arange(5), 8)\n"
            "s, g = r.random(40), r.integers(0, 3, 40).astype(float)\n"
            "lab.concordance(s, g, q).rate; lab.pooled_auc(s, g >= 1, q).value\n"
            "lab.pooled_spearman(s, g, q); lab.ordered_pairs(s, g, q).rate\n"
            "v = r.random((20, 4)); sep = rk.separation(v); rk.failure_modes(v)\n"
            "rk.decisive_agreement(sep, sep); rk.kendall_tau_b(v[0], v[1])\n"
            "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
