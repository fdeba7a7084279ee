"""The agreement analysis of one release (``rcp-data agree``, :func:`rcp_data.agree`).

Per subset, against the release's own human labels (its qrels, named ``qrels``) and every
extra label set:

- label layer: within-query concordance, AUC at a grade threshold over the pool, pooled
  Spearman with ceiling and floor, for RCP's calibrated theta, raw BT (``judge_bt``) and Count
  (``judge_criteria``) where the release carries them; an extra label set's own concordance
  with the reference labels;
- ranking layer: leaderboards of mean nDCG@k (systems: the release's provenance runs) under the
  release's gains (``rcp``) and under each label set; Kendall tau-b, Spearman rho and both RBO
  variants between each label set and ``rcp`` and the reference; sensitivity; decisive-pair
  agreement; failure modes of nDCG@k;
- label variation with two extra label sets or more.

Every rate has a 95% query-clustered percentile bootstrap interval (one set of query weights
per subset, fixed seed). The statistics themselves are the pure functions of
:mod:`.labels`, :mod:`.rankings` and :mod:`.variation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import TIE_RULES
from rcp_data.model.card_format import CARD_K, escape_cell
from rcp_data.model.release import Release
from rcp_data.scoring.agreement import labels as lab
from rcp_data.scoring.agreement import rankings as rk
from rcp_data.scoring.agreement.bootstrap import (
    MIN_QUERIES,
    RESAMPLES,
    SEED,
    interval_text,
    query_weights,
)
from rcp_data.scoring.agreement.judged import (
    EXCLUSION_RULE,
    excluded_mask,
    read_excluded,
    rule_text,
)
from rcp_data.scoring.agreement.labelsets import (
    RELEASE_LABELS,
    LabelSet,
    aggregate,
    check_known,
    label_sets,
)
from rcp_data.scoring.agreement.variation import DRAWS, label_variation
from rcp_data.scoring.metrics import ideal_dcg, ndcg_at_k_rules
from rcp_data.scoring.qrels_score import GAINS, gain_of
from rcp_data.scoring.replay import SubsetRuns, default_tie_rule, load_release

RCP = "rcp"
SCORES = ("rcp_theta", "raw_bt", "count")


@dataclass(frozen=True)
class AgreeResult:
    """The analysis as JSON-ready values (``to_json`` is ``rcp-data agree --json``)."""

    settings: dict
    subsets: dict
    pooled: dict

    def to_json(self) -> dict:
        return {**self.settings, "subsets": self.subsets, "pooled": self.pooled}

    def table(self) -> str:
        return render_table(self.to_json())


# -- aligning labels to a subset ------------------------------------------------------------------
@dataclass(frozen=True)
class _Aligned:
    gains: np.ndarray          # (n,) candidate gains
    ideal: np.ndarray          # (Q,)
    has_positive: np.ndarray   # (Q,)
    graded: pd.DataFrame       # query-id, corpus-id, grade, q (rows of this subset)


def _candidates(sub: SubsetRuns) -> pd.DataFrame:
    qidx = np.repeat(np.arange(sub.n_queries), np.diff(sub.offsets))
    queries = pa.array(np.asarray(sub.query_ids).astype(str), type=pa.string())
    return pa.table({"query-id": queries.take(pa.array(qidx)),            # built in arrow:
                     "corpus-id": sub.corpus_ids.cast(pa.string()),        # no Python strings
                     "q": qidx, "i": np.arange(len(qidx))}).to_pandas()


class _PairCodes:
    """One int64 key per ``(query-id, corpus-id)`` of a subset (``q * 2^32 + document code``;
    negative for a query outside the subset), so joins compare integers, not strings."""

    def __init__(self, query_ids: np.ndarray) -> None:
        self._queries = pa.array(np.asarray(query_ids, dtype=object), type=pa.string())
        self._docs = pa.array([], type=pa.string())

    def key(self, frame: pd.DataFrame) -> np.ndarray:
        docs = pa.array(frame["corpus-id"], type=pa.string())
        d = pc.index_in(docs, value_set=self._docs)
        if d.null_count:
            new = pc.unique(docs.filter(pc.is_null(d)))
            self._docs = pa.concat_arrays([self._docs, new])
            d = pc.index_in(docs, value_set=self._docs)
        d = d.to_numpy(zero_copy_only=False).astype(np.int64)
        if "q" in frame:
            q = frame["q"].to_numpy(np.int64)
        else:
            q = pc.index_in(pa.array(frame["query-id"], type=pa.string()),
                            value_set=self._queries).fill_null(-1).to_numpy().astype(np.int64)
        return q * (1 << 32) + d

    def keyed(self, frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(key=self.key(frame))


def _join(left: np.ndarray, right: np.ndarray, how: str = "inner"
          ) -> tuple[np.ndarray, np.ndarray]:
    """Row pairs ``(l, r)`` joining int keys in ``pd.merge``'s order (left's order; ``how="left"``
    keeps unmatched left rows with ``r = -1``)."""
    index = pd.Index(right)
    if index.is_unique:
        r = index.get_indexer(left)
        if how == "left":
            return np.arange(len(left)), r
        hit = np.flatnonzero(r >= 0)
        return hit, r[hit]
    m = pd.DataFrame({"key": left, "l": np.arange(len(left))}).merge(
        pd.DataFrame({"key": right, "r": np.arange(len(right))}), how=how, on="key")
    return m["l"].to_numpy(np.int64), m["r"].fillna(-1).to_numpy(np.int64)


def _align(frame: pd.DataFrame, cand: pd.DataFrame, qpos: pd.Series,
           excluded: pa.Table | None, n_q: int, k: int, gain: str, positive: int,
           codes: _PairCodes) -> _Aligned:
    """A label set on a subset's candidates (``cand`` keyed by ``codes``), the rows the
    exclusion rule leaves out (:func:`.judged.excluded_mask`) dropped."""
    rows = frame[frame["query-id"].isin(qpos.index)]
    if excluded is not None:
        rows = rows[~excluded_mask(rows["query-id"], rows["corpus-id"], excluded)]
    rows = rows.assign(q=qpos.reindex(rows["query-id"]).to_numpy().astype(np.int64))
    rows = codes.keyed(rows)
    li, ri = _join(cand["key"].to_numpy(), rows["key"].to_numpy(), "left")
    # a label set may lack this subset's rows: nothing to gather then (indexing an empty
    # array with the -1 of unmatched rows would raise)
    graded = rows["grade"].to_numpy(np.float64)
    grade = np.where(ri >= 0, graded[np.maximum(ri, 0)], np.nan) if len(graded) else \
        np.full(len(ri), np.nan)
    gains = np.zeros(len(cand))
    hit = ~np.isnan(grade)
    gains[cand["i"].to_numpy()[li[hit]]] = gain_of(grade[hit], gain)
    order = np.argsort(rows["q"].to_numpy(), kind="stable")
    counts = np.bincount(rows["q"].to_numpy(), minlength=n_q)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    ideal = ideal_dcg(offsets, gain_of(rows["grade"].to_numpy()[order], gain), k)
    pos = rows["grade"].to_numpy() >= positive
    has_pos = np.bincount(rows["q"].to_numpy()[pos], minlength=n_q) > 0
    return _Aligned(gains, ideal, has_pos, rows.reset_index(drop=True))


def _scores(release: Release, subset: str, rq: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """``{score name: query-id, corpus-id, value}`` for the scores this release carries."""
    out = {"rcp_theta": rq[["query-id", "corpus-id", "theta"]].rename(
        columns={"theta": "value"}).dropna()}
    split = release.spec.provenance_split(subset)
    queries = set(rq["query-id"])
    if release.has_provenance("judge_bt", split):
        bt = release.provenance("judge_bt", split)
        bt = bt[bt["query-id"].isin(queries)]
        out["raw_bt"] = bt.rename(columns={"theta_bt": "value"})[
            ["query-id", "corpus-id", "value"]].dropna()
    if release.has_provenance("judge_criteria", split):
        crit = release.provenance("judge_criteria", split)
        crit = crit[crit["query-id"].isin(queries)]
        if len(crit):
            out["count"] = lab.count_share(crit).rename(columns={"count": "value"})
    return out


def qrel_values(sub: SubsetRuns, *, k: int = CARD_K, rule: str = "doc-id",
                gain: str = "linear") -> np.ndarray:
    """``(Q, R)`` nDCG@k of a subset's runs on its own qrels grades under ``gain`` (NaN: a
    query without a positive qrel, left out as replay leaves it out)."""
    ideal = ideal_dcg(sub.ideal_offsets, gain_of(sub.ideal_gains[1], gain), k)
    res = ndcg_at_k_rules(sub.offsets, sub.scores, gain_of(sub.gains[1], gain), ideal, k=k,
                          tie_rules=[rule], doc_key=sub.doc_key if rule == "doc-id" else None)
    v = np.asarray(res[rule], dtype=np.float64).T.copy()
    v[~sub.has_positive] = np.nan
    return v


# -- the layers ------------------------------------------------------------------------------------
def _label_layer(graded: pd.DataFrame, scores: dict[str, pd.DataFrame], cand: pd.DataFrame,
                 n_q: int, weights: np.ndarray, threshold: int, seed: int, *,
                 spearman_interval: bool = False) -> dict:
    """Per score: concordance, AUC and the above-grade-0 shares with intervals (rates), the
    pooled Spearman with ceiling and floor (its interval only with ``spearman_interval``: a
    correlation, not a rate, and the one costly resampling)."""
    out = {}
    g_key, g_grade, g_q = (graded[c].to_numpy() for c in ("key", "grade", "q"))
    li, ri = _join(cand["key"].to_numpy(), g_key, "left")
    pool_key, pool_q = cand["key"].to_numpy()[li], cand["q"].to_numpy(np.int64)[li]
    pool_grade = np.where(ri >= 0, g_grade.astype(np.float64)[ri], np.nan)
    rest = ~np.isin(g_key, cand["key"].to_numpy())              # graded outside the pool
    rest_key, rest_grade, rest_q = g_key[rest], g_grade[rest], g_q[rest]
    for name, sc in scores.items():
        sc_key, sc_value = sc["key"].to_numpy(), sc["value"].to_numpy(np.float64)
        pl, pr = _join(pool_key, sc_key)
        rl, rr = _join(rest_key, sc_key)
        graded_pool = ~np.isnan(pool_grade[pl])
        g_value = np.concatenate([sc_value[pr][graded_pool], sc_value[rr]])
        g_grade = np.concatenate([pool_grade[pl][graded_pool], rest_grade[rl]]).astype(
            np.float64)
        g_q = np.concatenate([pool_q[pl][graded_pool], rest_q[rl]]).astype(np.int64)
        conc = lab.concordance(g_value, g_grade, g_q, n_q)
        value, q_pool = sc_value[pr], pool_q[pl]
        grade = np.where(np.isnan(pool_grade[pl]), 0.0, pool_grade[pl])   # ungraded: 0
        auc = lab.pooled_auc(value, grade >= threshold, q_pool, n_q)
        above = {}
        ranks, n_ranks = lab._codes(value)            # one ranking of the pool for each level
        for level in sorted(set(grade[grade > 0])):
            sel = (grade == level) | (grade <= 0)
            is_level = (grade[sel] == level).astype(np.int64)
            c = lab.ordered_pairs(value[sel], is_level, q_pool[sel], n_q,
                                  score_codes=(ranks[sel], n_ranks),
                                  label_codes=(is_level, int(is_level.max(initial=0)) + 1))
            above[f"{level:g}"] = c.with_interval(weights).to_json()
        rho = (lab.pooled_spearman(g_value, g_grade, g_q, seed=seed,
                                   weights=weights if spearman_interval else None).to_json()
               if len(g_value) > 2 else None)
        out[name] = {"documents": len(g_value), "concordance": conc.with_interval(weights).to_json(),
                     "pairs": int(conc.pairs.sum()),
                     "auc": {"threshold": threshold, "positives": int(auc.positives.sum()),
                             "negatives": int(auc.negatives.sum()),
                             **auc.with_interval(weights).to_json()},
                     "above_grade_0_pool_page": above, "spearman": rho}
    return out


def _boards(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    keep = rk.kept(values)
    w = weights if keep.all() else weights[:, keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ values[keep]) / w.sum(axis=1, keepdims=True)


def _compare(a: str, b: str, va: np.ndarray, vb: np.ndarray, weights: np.ndarray,
             p: float) -> dict:
    la, lb = rk.leaderboard(va), rk.leaderboard(vb)
    ba, bb = _boards(va, weights), _boards(vb, weights)
    oa, ob = rk.order(la), rk.order(lb)
    idx = rk.pair_index(len(la))
    sa, sb = np.sign(la[idx[:, 0]] - la[idx[:, 1]]), np.sign(lb[idx[:, 0]] - lb[idx[:, 1]])
    from rcp_data.scoring.agreement.bootstrap import interval
    return {
        "a": a, "b": b,
        "kendall_tau_b": interval(rk.kendall_tau_b(la, lb), rk.kendall_tau_b(ba, bb)).to_json(),
        "spearman_rho": interval(rk.spearman_rho(la, lb), rk.spearman_rho(ba, bb)).to_json(),
        "rbo_extrapolated": interval(rk.rbo_extrapolated(oa, ob, p), rk.rbo_extrapolated(
            rk.order(ba), rk.order(bb), p)).to_json(),
        "rbo_package": interval(rk.rbo_package(oa, ob, p), rk.rbo_package(
            rk.order(ba), rk.order(bb), p)).to_json(),
        "average_overlap": rk.rbo_package(oa, ob, 1.0),
        "swapped_pairs": float(np.mean(sa * sb < 0)) if len(idx) else None,
    }


def _ranking_layer(values: dict[str, np.ndarray], models: list[str], reference: str,
                   weights: np.ndarray, p: float, seps: dict[str, rk.Separation]) -> dict:
    """``seps``: :func:`rk.separation` of each of ``values`` with ``weights``."""
    out: dict = {
        "leaderboards": {m: dict(zip(models, map(float, rk.leaderboard(v)), strict=True))
                         for m, v in values.items()},
        "queries_kept": {m: int(rk.kept(v).sum()) for m, v in values.items()},
        "sensitivity": {m: {"separated": int(s.separated.sum()), "pairs": len(s.separated),
                            **rk.sensitivity(s).to_json()} for m, s in seps.items()},
        "failure_modes": {m: {k: i.to_json() for k, i in rk.failure_shares(
            rk.failure_modes(v), weights).items()} for m, v in values.items()},
    }
    comparisons, decisive = [], []
    for name in values:
        if name == RCP:
            continue
        comparisons.append(_compare(name, RCP, values[name], values[RCP], weights, p))
        decisive.append({"metric": RCP, "reference": name,
                         **rk.decisive_agreement(seps[RCP], seps[name]).to_json()})
        if name != reference and reference in values:
            comparisons.append(_compare(name, reference, values[name], values[reference],
                                        weights, p))
            decisive.append({"metric": name, "reference": reference,
                             **rk.decisive_agreement(seps[name], seps[reference]).to_json()})
    out["comparisons"] = comparisons
    out["decisive"] = decisive
    return out


# -- the analysis --------------------------------------------------------------------------------
def agree(release: str | Path | Release | None = None,
          labels: Mapping[str, str | Path | pd.DataFrame] | None = None, *,
          qrels: str | Path | pd.DataFrame | None = None, runs=(),
          aggregate_by: str | None = None, reference: str = RELEASE_LABELS,
          k: int = CARD_K, tie_rule: str | None = None, gain: str = "linear",
          threshold: int | None = None, rbo_p: float = rk.RBO_P, seed: int = SEED,
          resamples: int = RESAMPLES, draws: int = DRAWS, suite=None, client=None,
          plain: Mapping | None = None) -> AgreeResult:
    """Agreement of a release's gains with its qrels and the extra ``labels``
    (``{name: qrels file or frame}``); see the module docstring. With ``qrels`` (a primary
    assessor's file) instead of a release: :func:`.plain.agree_files` on plain files, with
    ``runs`` and its keyword options in ``plain``."""
    if qrels is not None:
        from rcp_data.scoring.agreement.plain import agree_files

        if release is not None:
            raise UsageError("give a release or --qrels, not both")
        return agree_files(qrels, labels or {}, runs, rbo_p=rbo_p, seed=seed, draws=draws,
                           threshold=2 if threshold is None else threshold, **(plain or {}))
    if release is None:
        raise UsageError("give a release directory, or --qrels PRIMARY with --labels")
    if gain not in GAINS:
        raise UsageError(f"unknown gain {gain!r}; choose one of {', '.join(GAINS)}")
    if tie_rule is not None and tie_rule not in TIE_RULES:
        raise UsageError(f"unknown tie rule {tie_rule!r}; choose one of {', '.join(TIE_RULES)}")
    if not 0 < rbo_p <= 1:
        raise UsageError(f"--rbo-p must lie in (0, 1] (got {rbo_p})")
    if resamples < 1 or draws < 1:
        raise UsageError("--resamples and --draws must be at least 1")
    with one_blas_thread():
        return _agree(release, labels, aggregate_by=aggregate_by, reference=reference, k=k,
                      tie_rule=tie_rule, gain=gain, threshold=threshold, rbo_p=rbo_p, seed=seed,
                      resamples=resamples, draws=draws, suite=suite, client=client)


def one_blas_thread():
    """A context with BLAS on one thread. The products here are small (resamples x queries
    by queries x systems or queries): a second thread saves little on a quiet machine and,
    spinning while it waits, costs much CPU time on a loaded one. Results do not depend on
    it (each output's sum runs in one thread either way)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _agree(release, labels, *, aggregate_by, reference, k, tie_rule, gain, threshold, rbo_p,
           seed, resamples, draws, suite, client) -> AgreeResult:
    from rcp_data.scoring.api import opened

    rel = opened(release, suite=suite, client=client)
    spec = rel.spec
    data = load_release(rel.root, spec, known=rel.known)
    rule = tie_rule or default_tie_rule(spec, rel.known)
    thr = spec.grade_positive if threshold is None else threshold
    extras = label_sets(labels)
    qrels = {s: rel.table(s, "qrels", ["query-id", "corpus-id", "score", "theta"])
             for s in data.subsets}
    cands = {s: _candidates(sub) for s, sub in data.subsets.items()}
    if extras:                                      # the pairs a label file may name
        known = pd.concat([c[["query-id", "corpus-id"]] for c in cands.values()]
                          + [q[["query-id", "corpus-id"]] for q in qrels.values()],
                          ignore_index=True).drop_duplicates()
        for ls in extras:
            check_known(ls, known)
    sets: list[LabelSet] = [LabelSet(RELEASE_LABELS, "<release qrels>", pd.DataFrame({
        "query-id": pd.concat([q["query-id"] for q in qrels.values()]).astype(str).to_numpy(),
        "corpus-id": pd.concat([q["corpus-id"] for q in qrels.values()]).astype(str).to_numpy(),
        "grade": pd.concat([q["score"] for q in qrels.values()]).astype(float).to_numpy()}))]
    sets += extras
    if aggregate_by:
        sets.append(aggregate(extras, aggregate_by))
    names = [s.name for s in sets]
    if reference not in names:
        raise UsageError(f"unknown reference label set {reference!r}; choose one of "
                         f"{', '.join(names)}")
    subsets, pooled_parts = {}, []
    split = _by_subset(sets, data.subsets)
    reader = _SplitReader(rel)
    for si, (s, sub) in enumerate(data.subsets.items()):
        subsets[s], part = _subset(reader, s, sub, cands[s], qrels[s], split[s], extras,
                                   reference, k=k, rule=rule, gain=gain, thr=thr, p=rbo_p,
                                   seed=seed + si, resamples=resamples, draws=draws)
        pooled_parts.append(part)
    settings = {"release": str(rel.ref or rel.root), "suite": spec.name, "k": k,
                "tie_rule": rule, "gain": gain, "reference": reference,
                "label_sets": names, "grade_threshold": thr, "exclusion_rule": EXCLUSION_RULE,
                "bootstrap": {"resamples": resamples, "seed": seed, "level": 0.95,
                              "unit": "query, per subset"},
                "rbo": {"p": rbo_p, "variants": {"rbo_extrapolated": rk.RBO_VARIANTS[0],
                                                 "rbo_package": rk.RBO_VARIANTS[1],
                                                 "average_overlap": "rbo package .rbo(p=1.0)"}}}
    return AgreeResult(settings, subsets, _pooled(pooled_parts, resamples, seed))


class _SplitReader:
    """The release, with its provenance tables read once per split: the subsets of a split
    (ViDoRe: the languages of a domain) come one after another, so the last split's tables
    are kept, and no more."""

    def __init__(self, release: Release) -> None:
        self._release = release
        self._last: dict[str, tuple[str, pd.DataFrame]] = {}

    def __getattr__(self, name: str):
        return getattr(self._release, name)

    def provenance(self, kind: str, split: str) -> pd.DataFrame:
        if kind not in self._last or self._last[kind][0] != split:
            self._last[kind] = (split, self._release.provenance(kind, split))
        return self._last[kind][1]


def _by_subset(sets: list[LabelSet], subsets: Mapping[str, SubsetRuns]
               ) -> dict[str, list[LabelSet]]:
    """Each label set cut into the rows of each subset's queries, in the set's row order (the
    rows :func:`_align` keeps), reading each set once; every whole set for every subset when
    two subsets share a query id."""
    names = list(subsets)
    qids = [np.asarray(subsets[s].query_ids, dtype=object) for s in names]
    every = pa.array(np.concatenate(qids) if qids else [], type=pa.string())
    if not names or pc.count_distinct(every).as_py() != len(every):
        return {s: sets for s in names}
    owner = np.repeat(np.arange(len(names)), [len(q) for q in qids])
    out: dict[str, list[LabelSet]] = {s: [] for s in names}
    for ls in sets:
        at = pc.index_in(pa.array(ls.frame["query-id"], type=pa.string()), value_set=every)
        who = np.where(at.is_valid().to_numpy(zero_copy_only=False),
                       owner[at.fill_null(0).to_numpy()], -1)
        order = np.argsort(who, kind="stable")
        bounds = np.searchsorted(who[order], np.arange(len(names) + 1))
        for i, s in enumerate(names):
            rows = np.sort(order[bounds[i]:bounds[i + 1]])
            out[s].append(LabelSet(ls.name, ls.source, ls.frame.iloc[rows]))
    return out


def _subset(rel: Release, s: str, sub: SubsetRuns, cand: pd.DataFrame, rq: pd.DataFrame,
            sets: list[LabelSet], extras: list[LabelSet], reference: str, *, k: int, rule: str,
            gain: str, thr: int, p: float, seed: int, resamples: int, draws: int
            ) -> tuple[dict, dict]:
    return subset_stats(sub, cand, _scores(rel, s, rq), sets, extras, reference,
                        excluded=read_excluded(rel.root, s), positive=rel.spec.grade_positive,
                        k=k, rule=rule,
                        gain=gain, thr=thr, p=p, seed=seed, resamples=resamples, draws=draws)


def subset_stats(sub: SubsetRuns, cand: pd.DataFrame, scores: dict[str, pd.DataFrame],
                 sets: list[LabelSet], extras: list[LabelSet], reference: str, *,
                 excluded: pa.Table | pd.DataFrame | None, positive: int, k: int, rule: str,
                 gain: str, thr: int,
                 p: float, seed: int, resamples: int, draws: int) -> tuple[dict, dict]:
    """One subset's analysis from its runs, candidates (:func:`_candidates`), scores
    (``{name: query-id, corpus-id, value}``) and label sets; the JSON part and what
    :func:`_pooled` needs."""
    n_q = sub.n_queries
    qpos = pd.Series(np.arange(n_q), index=pd.Index(sub.query_ids.astype(str)))
    codes = _PairCodes(sub.query_ids)
    cand = codes.keyed(cand)
    aligned = {ls.name: _align(ls.frame, cand, qpos, excluded, n_q, k, gain, positive, codes)
               for ls in sets}
    scores = {name: codes.keyed(sc) for name, sc in scores.items()}
    weights = query_weights(n_q, resamples=resamples, seed=seed)
    gains = np.vstack([sub.gains[0]] + [a.gains for a in aligned.values()])
    ideal = np.vstack([ideal_dcg(sub.ideal_offsets, sub.ideal_gains[0], k)]
                      + [a.ideal for a in aligned.values()])
    res = ndcg_at_k_rules(sub.offsets, sub.scores, gains, ideal, k=k, tie_rules=[rule],
                          doc_key=sub.doc_key if rule == "doc-id" else None)[rule]  # (R, M, Q)
    values = {RCP: res[:, 0, :].T.copy()}
    for m, (name, a) in enumerate(aligned.items(), start=1):
        v = res[:, m, :].T.copy()
        v[~a.has_positive] = np.nan
        if rk.kept(v).sum() >= 2:                      # a label set of this subset's queries
            values[name] = v
    seps = {m: rk.separation(v, weights=weights) for m, v in values.items()}
    label_layer = {name: _label_layer(a.graded, scores, cand, n_q, weights, thr, seed)
                   for name, a in aligned.items() if len(a.graded)}
    ref_key = aligned[reference].graded["key"].to_numpy()
    ref_grade = aligned[reference].graded["grade"].to_numpy(np.float64)
    vs_ref = {}
    for name, a in aligned.items():
        if name == reference or not len(a.graded):
            continue
        li, ri = _join(a.graded["key"].to_numpy(), ref_key)
        c = lab.concordance(a.graded["grade"].to_numpy(np.float64)[li], ref_grade[ri],
                            a.graded["q"].to_numpy()[li], n_q)
        vs_ref[name] = {"documents": len(li), "pairs": int(c.pairs.sum()),
                        **c.with_interval(weights).to_json()}
    out = {"queries": n_q, "systems": list(sub.models),
           "labels": label_layer, "labels_vs_reference": vs_ref,
           **_ranking_layer(values, list(sub.models), reference, weights, p, seps)}
    if sum(e.name in values for e in extras) >= 2 and len(sub.models) >= 2 and \
            reference in values:
        ref_board = rk.leaderboard(values[reference])
        present = [e.name for e in extras if e.name in values]
        secondary = np.stack([values[e].T for e in present])               # (A, S, Q)
        keep = ~np.isnan(secondary).all(axis=(0, 1))
        if keep.any():
            var = label_variation(secondary[:, :, keep], ref_board, draws=draws, seed=seed,
                                  rbo_p=p)
            idx = rk.pair_index(len(sub.models))
            top = np.argsort(-var.swap, kind="stable")[:10]
            out["variation"] = {
                "assessors": present, "topics": int(keep.sum()),
                **var.summary(),
                "pairs": [{"a": sub.models[int(idx[i, 0])], "b": sub.models[int(idx[i, 1])],
                           "swap": float(var.swap[i]),
                           "swap_vs_reference": float(var.swap_vs_reference[i])} for i in top]}
    ref_values = values.get(reference, values[RCP] * np.nan)
    modes = rk.failure_modes(ref_values)
    conc, documents = None, 0
    if "rcp_theta" in scores:
        ref = aligned[reference].graded
        li, ri = _join(ref["key"].to_numpy(), scores["rcp_theta"]["key"].to_numpy())
        conc = lab.concordance(scores["rcp_theta"]["value"].to_numpy(np.float64)[ri],
                               ref["grade"].to_numpy(np.float64)[li], ref["q"].to_numpy()[li],
                               n_q)
        documents = len(li)
    sens = seps[reference].separated if reference in values else np.array([np.nan])
    sens_rcp = seps[RCP].separated                     # (the same without weights)
    return out, {"modes": modes, "conc": conc, "documents": documents,
                 "sens": (sens.mean(), sens_rcp.mean())}


def _pooled(parts: list[dict], resamples: int, seed: int) -> dict:
    """Over all subsets: failure modes of the reference's nDCG@k and RCP's concordance with the
    reference (query sums, subsets resampled apart; the card's Diagnostics' RCP concordance
    when the reference is the release's qrels) and the documents it counts, the mean
    sensitivity per subset."""
    from rcp_data.scoring.agreement.bootstrap import ratio_of_sums

    if not parts:
        return {}
    sizes = [len(p["modes"]["kept"]) for p in parts]
    strata = np.repeat(np.arange(len(parts)), sizes)
    w = query_weights(int(sum(sizes)), resamples=resamples, seed=seed, strata=strata)
    modes = {m: np.concatenate([p["modes"][m] for p in parts]) for m in parts[0]["modes"]}
    out = {"failure_modes_reference": {m: i.to_json()
                                       for m, i in rk.failure_shares(modes, w).items()},
           "sensitivity_mean_over_subsets": {
               "reference": float(np.mean([p["sens"][0] for p in parts])),
               RCP: float(np.mean([p["sens"][1] for p in parts]))}}
    if all(p["conc"] is not None for p in parts):
        out["concordance_rcp_theta_reference"] = ratio_of_sums(
            np.concatenate([p["conc"].wins for p in parts]),
            np.concatenate([p["conc"].pairs for p in parts]), w).to_json()
        out["documents_rcp_theta_reference"] = int(sum(p["documents"] for p in parts))
    return out


# -- the table -----------------------------------------------------------------------------------
def _iv(d: dict | None, queries: int, pct: bool = False) -> str:
    """A value and its interval from ``queries`` (the smallest subset resampled)."""
    if not d or d.get("value") is None:
        return "-"
    f = (lambda x: f"{100 * x:.1f}%") if pct else (lambda x: f"{x:.3f}")
    if d.get("lo") is None and queries >= MIN_QUERIES:
        return f(d["value"])
    return f"{f(d['value'])} {interval_text(d.get('lo'), d.get('hi'), queries, f)}"


def _c(text: object) -> str:
    """A name as one cell of the agreement tables (a newline, '|' or ESC shown escaped)."""
    return escape_cell(str(text))


def render_table(doc: dict) -> str:
    """The analysis as text tables (what ``rcp-data agree`` prints)."""
    lines = [f"Agreement of {_c(doc['release'])} (suite {_c(doc['suite'])}): nDCG@{doc['k']}, "
             f"tie rule {doc['tie_rule']}, {doc['gain']} gain, reference {doc['reference']!r}; 95% "
             f"query bootstrap intervals ({doc['bootstrap']['resamples']} resamples, seed "
             f"{doc['bootstrap']['seed']}); RBO p = {doc['rbo']['p']}"]
    if doc.get("exclusion_rule"):
        lines.append(f"Labels: {doc['exclusion_rule']} (the rule of the card's Diagnostics)")
    for s, d in doc["subsets"].items():
        n = int(d["queries"])
        lines += ["", f"== {_c(s)}: {d['queries']} queries, {len(d['systems'])} systems =="]
        lines.append(f"Label layer (score vs grade): concordance | AUC grade>="
                     f"{doc['grade_threshold']} | pooled Spearman (ceiling, floor)")
        for name, scores in d["labels"].items():
            for sc, v in scores.items():
                rho = v["spearman"]
                rho_s = "-" if rho is None else (f"{_iv(rho['observed'], n)} "
                                                 f"({rho['ceiling']:.3f}, "
                                                 f"{rho['floor']:.3f})")
                lines.append(f"  {_c(name):<14} {_c(sc):<10} {_iv(v['concordance'], n)} | "
                             f"{_iv(v['auc'], n)} | {rho_s}")
        for name, v in d["labels_vs_reference"].items():
            lines.append(f"  {_c(name)} grades vs {_c(doc['reference'])}: "
                         f"concordance {_iv(v, n)}")
        lines.append("Leaderboards (mean nDCG, %):")
        metrics = list(d["leaderboards"])
        lines.append("  " + f"{'system':<36}" + "".join(f"{m[:12]:>13}" for m in metrics))
        for sys_ in d["systems"]:
            lines.append("  " + f"{_c(sys_)[:36]:<36}" + "".join(
                f"{100 * d['leaderboards'][m][sys_]:>13.1f}" for m in metrics))
        lines.append("Sensitivity (pairs separated, paired t-test 5%) | failure modes "
                     "(saturates, floors, compresses, any):")
        for m in metrics:
            sv, fm = d["sensitivity"][m], d["failure_modes"][m]
            lines.append(f"  {m:<14} {sv['separated']}/{sv['pairs']} {_iv(sv, n, True)} | "
                         + ", ".join(_iv(fm[x], n, True) for x in (*rk.FAILURE_MODES, "any")))
        lines.append("Leaderboard agreement: Kendall tau-b | Spearman rho | RBO extrapolated "
                     "(Webber 2010) | RBO package .rbo(p) | swapped pairs")
        for c in d["comparisons"]:
            lines.append(f"  {_c(c['a'])} vs {_c(c['b'])}: {_iv(c['kendall_tau_b'], n)} | "
                         f"{_iv(c['spearman_rho'], n)} | {_iv(c['rbo_extrapolated'], n)} | "
                         f"{_iv(c['rbo_package'], n)} | {100 * (c['swapped_pairs'] or 0):.1f}%")
        for c in d["decisive"]:
            lines.append(f"  decisive pairs of {_c(c['reference'])}: {c['metric']} agrees on "
                         f"{c['agree']}/{c['decisive']} {_iv(c['rate'], n, True)}")
        if "variation" in d:
            v = d["variation"]
            lines.append(f"Label variation over {', '.join(map(_c, v['assessors']))} ({v['draws']} draws, "
                         f"{v['topics']} topics): Kendall {v['kendall']['mean']:.3f}, Spearman "
                         f"{v['spearman']['mean']:.3f}, RBO extrapolated "
                         f"{v['rbo_extrapolated']['mean']:.3f}, RBO package "
                         f"{v['rbo_package']['mean']:.3f}; largest swap probability "
                         f"{v['swap_max']:.3f}")
    pooled = doc["pooled"]
    if pooled:
        n = min(int(d["queries"]) for d in doc["subsets"].values())
        fm = pooled["failure_modes_reference"]
        lines += ["", "All subsets: failure modes of the reference's nDCG (any) "
                  f"{_iv(fm['any'], n, True)}; RCP concordance with the reference "
                  f"{_iv(pooled.get('concordance_rcp_theta_reference'), n)}"
                  + (f" ({rule_text(pooled['documents_rcp_theta_reference'])} documents)"
                     if doc.get("exclusion_rule") and "documents_rcp_theta_reference" in pooled
                     else "")]
    return "\n".join(lines) + "\n"


__all__ = ["RCP", "AgreeResult", "agree", "one_blas_thread", "qrel_values", "render_table",
           "subset_stats"]
