"""Agreement statistics against independent computations: scipy (mannwhitneyu, spearmanr,
kendalltau variant b, ttest_rel) and a plain pair loop, on SYNTHETIC labels."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from rcp_data.scoring import diagnostics as dg


def _labels(seed: int = 1, queries: int = 12, per: int = 15):
    rng = np.random.default_rng(seed)
    q = np.repeat([f"q{i}" for i in range(queries)], per)
    grade = rng.integers(0, 4, size=q.size)
    score = np.round(grade + rng.normal(scale=1.2, size=q.size), 1)      # ties on purpose
    return q, score, grade


def test_concordance_equals_a_pair_loop():
    q, s, g = _labels()
    agree = pairs = 0.0
    for i, j in combinations(range(len(q)), 2):
        if q[i] != q[j] or g[i] == g[j]:
            continue
        pairs += 1
        agree += 0.5 if s[i] == s[j] else float((s[i] - s[j]) * (g[i] - g[j]) > 0)
    assert dg.concordance(q, s, g) == pytest.approx(agree / pairs, abs=1e-15)
    assert dg.concordance(q, g.astype(float), g) == 1.0
    assert dg.concordance(q, -g.astype(float), g) == 0.0


@pytest.mark.parametrize("threshold", [1, 2])
def test_auc_equals_mann_whitney(threshold):
    _, s, g = _labels(2)
    pos = g >= threshold
    u = stats.mannwhitneyu(s[pos], s[~pos], alternative="two-sided").statistic
    assert dg.auc(s, g, threshold) == pytest.approx(u / (pos.sum() * (~pos).sum()), abs=1e-15)


def test_pooled_spearman_with_ceiling_and_floor():
    q, s, g = _labels(3)
    res = dg.pooled_spearman(q, s, g)
    assert res.rho == pytest.approx(stats.spearmanr(s, g).statistic, abs=1e-15)
    best = s.copy()
    for qq in np.unique(q):
        rows = np.flatnonzero(q == qq)
        best[rows[np.argsort(g[rows], kind="stable")]] = np.sort(s[rows])
    assert res.ceiling == pytest.approx(stats.spearmanr(best, g).statistic, abs=1e-15)
    assert res.floor < res.rho < res.ceiling
    assert abs(res.floor) < 0.2              # shuffling within queries leaves little


def test_sensitivity_and_kendall_against_scipy():
    rng = np.random.default_rng(4)
    values = rng.random((5, 30)) + np.linspace(0, 0.3, 5)[:, None]
    p = [stats.ttest_rel(values[i], values[j]).pvalue for i, j in combinations(range(5), 2)]
    assert np.allclose(dg.paired_p_values(values), p, rtol=0, atol=1e-15)
    assert dg.sensitivity(values) == np.mean(np.array(p) < 0.05)
    a, b = [0.5, 0.4, 0.4, 0.1], [0.6, 0.3, 0.35, 0.35]
    assert dg.kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b, variant="b").statistic)


def test_failure_modes_by_construction():
    v = np.array([[1.0, 0.0, 0.5, 0.5, 0.2],
                  [1.0, 0.0, 0.5, 0.5, 0.3],
                  [1.0, 0.0, 0.5, 0.9, 0.4]])
    fm = dg.failure_modes(v)
    # query 0 saturates, 1 floors, 2 compresses (3 of 3 pairs tie), 3 compresses? 1 of 3: no
    assert (fm.saturates, fm.floors, fm.compresses, fm.queries) == (0.2, 0.2, 0.2, 5)
    assert fm.any == pytest.approx(0.6)


def test_leaderboard_intervals_cover_the_means():
    rng = np.random.default_rng(5)
    strata = [rng.random((3, 20)), rng.random((3, 35))]
    ci = dg.leaderboard_intervals(strata)
    means = np.mean([s.mean(axis=1) for s in strata], axis=0)
    assert ci.shape == (3, 2) and np.all(ci[:, 0] < means) and np.all(means < ci[:, 1])
