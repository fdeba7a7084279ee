"""The paper's agreement numbers (``paper_values.json``'s ``agreement`` entries) recomputed on a
release: E.4, C.6, Table 20 (pool panel), G.1 and H.1, where the release's own tables allow it.

Recomputed (suite = the spec's ``paper_key``; subsets: the paper view's, e.g. ViDoRe's native
ones; TREC-DL per year):

- ``failure_any_pct``: share of queries on which the paper rule's qrel-nDCG@10 saturates,
  floors or compresses (G.1, C.6);
- ``sensitivity_{qrel,rcp}_mean_over_subsets_pct``, ``kendall_rcp_vs_qrel`` (C.6);
- ``separated_*:pool``, ``same_winner_rcp_cal_a:pool``, ``decisive_*`` and
  ``kendall_rcp_vs_nist_14`` (Table 20, H.1), the exponential-gain row included;
- ``concordance_rcp_theta``, ``spearman_*`` (ceiling; the floor within its tolerance),
  ``grade_g_above_unjudged_pool_page``, ``auc_grade_1_rcp_gain`` (E.4).

Entries marked ``recomputable: false`` say why not (top-150 panel, CAL-B, raw BT, Count-nDCG,
the first-stage runs).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.checks.reports import Check
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.card_format import PAPER_K

TRECDL_YEARS = {"dl19": "trec_dl_2019", "dl20": "trec_dl_2020"}


def _code(uniques, value: str) -> int:
    """The position of ``value`` among a factorization's uniques, -1 when absent."""
    hits = np.flatnonzero(np.asarray(uniques, dtype=object) == value)
    return int(hits[0]) if len(hits) else -1


class _PerQuery:
    """The per-query table's columns as integer codes, so that every (tie rule, subset) part
    is a mask over arrays rather than a pandas filter and pivot."""

    def __init__(self, per_query: pd.DataFrame):
        self.rule, self._rules = pd.factorize(per_query["tie_rule"])
        self.subset, self._subsets = pd.factorize(per_query["subset"])
        self.model, self.models = pd.factorize(per_query["model"])
        self.query = pd.factorize(per_query["query-id"], sort=True)[0]   # codes in id order
        self.values = {m: per_query[m].to_numpy(dtype=np.float64)
                       for m in ("rcp_ndcg", "qrel_ndcg")}

    def code(self, subset: str) -> int:
        return _code(self._subsets, subset)

    def rows(self, rule: str, subsets: list[str]) -> np.ndarray:
        """The rows of ``rule`` and ``subsets``, in table order."""
        wanted = np.zeros(len(self._subsets) + 1, dtype=bool)   # the last: a null subset
        for c in (self.code(s) for s in subsets):
            wanted[c] = c >= 0
        code = _code(self._rules, rule)
        if code < 0:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero((self.rule == code) & wanted[self.subset])

    def model_names(self, rows: np.ndarray) -> list[str]:
        return sorted(str(self.models[c]) for c in np.unique(self.model[rows]))

    def wide(self, rows: np.ndarray, metric: str, models: list[str]) -> np.ndarray:
        """``(queries, models)``: ``pivot_table(index="query-id", columns="model",
        aggfunc="first", dropna=False)[models]``: queries in id order, the first value that
        is not NaN of a repeated (query, model), NaN where none."""
        where = {str(m): j for j, m in enumerate(self.models)}
        column = np.full(len(where) + 1, -1, dtype=np.int64)     # the last: a null model
        for j, m in enumerate(models):
            if m in where:
                column[where[m]] = j
        uq, qi = np.unique(self.query[rows], return_inverse=True)
        out = np.full((len(uq), len(models)), np.nan)
        v, mi = self.values[metric][rows], column[self.model[rows]]
        at = np.flatnonzero(~np.isnan(v) & (mi >= 0))[::-1]     # the first one written last
        out[qi[at], mi[at]] = v[at]
        return out


def _subset_groups(spec: SuiteSpec, present: list[str]) -> dict[str, list[str]]:
    """``{entry subset: release subsets}``: ``*`` the paper view's subsets, TREC-DL's years."""
    view = spec.paper_view or "subsets"
    members = [m for _, _, ms in spec.view_columns(view) for m in ms if m in present]
    groups = {"*": members or present}
    years = {y: s for y, s in TRECDL_YEARS.items() if s in present}
    if years:
        groups.update({y: [s] for y, s in years.items()})
        groups["both"] = list(years.values())
    return groups


def _ranking_values(per_query: pd.DataFrame, spec: SuiteSpec, groups: dict[str, list[str]],
                    exp_values: dict[str, np.ndarray]) -> dict[tuple[str, str], object]:
    from rcp_data.scoring.agreement import rankings as rk

    rule = spec.paper_tie_rule
    out: dict[tuple[str, str], object] = {}
    table = _PerQuery(per_query)
    for key, subsets in groups.items():
        by_rule = {}
        for r in {rule, "group-mean"}:
            rows = table.rows(r, subsets)
            if not len(rows):
                continue
            models = table.model_names(rows)
            per_sub = [rows[table.subset[rows] == table.code(s)] for s in subsets]
            by_rule[r] = {m: [table.wide(p, m, models) for p in per_sub]
                          for m in ("rcp_ndcg", "qrel_ndcg")}
        if rule not in by_rule:
            continue
        rcp, qrel = by_rule[rule]["rcp_ndcg"], by_rule[rule]["qrel_ndcg"]
        modes = [rk.failure_modes(v) for v in qrel]
        kept = sum(int(m["kept"].sum()) for m in modes)
        out[(key, "failure_any_pct")] = 100 * sum(int(m["any"].sum()) for m in modes) / kept
        out[(key, "sensitivity_qrel_mean_over_subsets_pct")] = 100 * float(np.mean(
            [rk.separation(v).separated.mean() for v in qrel]))
        out[(key, "sensitivity_rcp_mean_over_subsets_pct")] = 100 * float(np.mean(
            [rk.separation(v).separated.mean() for v in rcp]))
        boards_r = np.mean([rk.leaderboard(v) for v in rcp], axis=0)
        boards_q = np.mean([rk.leaderboard(v) for v in qrel], axis=0)
        out[(key, "kendall_rcp_vs_qrel")] = rk.kendall_tau_b(boards_r, boards_q)
        out[(key, "kendall_rcp_vs_nist_14")] = rk.kendall_tau_b(boards_r, boards_q)
        r_all, q_all = np.vstack(rcp), np.vstack(qrel)
        s_r, s_q = rk.separation(r_all), rk.separation(q_all)
        dec = rk.decisive_agreement(s_r, s_q)
        out[(key, "separated_qrel_linear:pool")] = int(s_q.separated.sum())
        out[(key, "separated_rcp_cal_a:pool")] = int(s_r.separated.sum())
        out[(key, "same_winner_rcp_cal_a:pool")] = f"{dec.agree}/{dec.decisive}"
        out[(key, "decisive_qrel_linear_both_years")] = dec.decisive
        out[(key, "agree_rcp_both_years")] = dec.agree
        if "group-mean" in by_rule:
            q_gm = np.vstack(by_rule["group-mean"]["qrel_ndcg"])
            out[(key, "decisive_qrel_linear_group_mean")] = int(rk.separation(q_gm)
                                                                .separated.sum())
        if all(s in exp_values for s in subsets):
            out[(key, "separated_qrel_exp:pool")] = int(rk.separation(
                np.vstack([exp_values[s] for s in subsets])).separated.sum())
    return out


def _label_values(root: Path, spec: SuiteSpec, groups: dict[str, list[str]], data
                  ) -> dict[tuple[str, str], object]:
    from rcp_data.model.orders import dense_codes
    from rcp_data.model.release import open_release
    from rcp_data.scoring.agreement import labels as lab

    release = open_release(root, suite=spec)
    out: dict[tuple[str, str], object] = {}
    joined = {s: _joined(release, data.subsets[s]) for ss in groups.values() for s in ss}
    for key, subsets in groups.items():
        if all(joined[s] is not None for s in subsets):   # integer keys, every pair once
            g, p, offset = _stacked([joined[s] for s in subsets],
                                    [data.subsets[s].n_queries for s in subsets])
        else:
            g, p, offset = _merged(release, data, subsets)
        if not len(g):
            continue
        qi, grade, theta = g["q"].to_numpy(int), g["score"].to_numpy(float), g["theta"].to_numpy()
        out[(key, "concordance_rcp_theta")] = lab.concordance(theta, grade, qi, offset).rate
        rho = lab.pooled_spearman(theta, grade, qi)
        out[(key, "spearman_rcp_theta")] = rho.observed.value
        out[(key, "spearman_ceiling")] = rho.ceiling
        out[(key, "spearman_floor")] = rho.floor
        pg = p["score"].fillna(0).to_numpy(float)
        p_theta, p_q = p["theta"].to_numpy(float), p["q"].to_numpy(int)
        have = ~np.isnan(p_theta)
        ranks = np.zeros(len(p_theta), dtype=np.int64)     # one ranking for both levels
        ranks[have], n_ranks = dense_codes(p_theta[have])
        for level in (1, 2):
            sel = have & ((pg == level) | (pg <= 0))
            is_level = (pg[sel] == level).astype(np.int64)
            if is_level.any():
                out[(key, f"grade_{level}_above_unjudged_pool_page")] = lab.ordered_pairs(
                    p_theta[sel], is_level, p_q[sel], offset,
                    score_codes=(ranks[sel], n_ranks), label_codes=(is_level, 2)).rate
        out[(key, "auc_grade_1_rcp_gain")] = lab.pooled_auc(
            p["gain"].fillna(0).to_numpy(), pg >= 1, p["q"].to_numpy(int), offset).value
    return out


def _joined(release, sub) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """One subset's graded qrels rows (``q``, the query local, ``score``, ``theta``) and its
    candidates left-joined with its qrels (``score``, ``gain``, ``theta``; NaN where a
    candidate has no row), on integer codes: what the pandas merges of :func:`_merged` give,
    row for row. None when a (query, document) pair has two qrels rows (the merge repeats a
    candidate then)."""
    import pyarrow as pa

    from rcp_data.core.io import float_values
    from rcp_data.model.keys import PairKeys, positions, strings, vocabulary
    from rcp_data.model.layout import subset_file
    from rcp_data.model.tables import read_release_table
    from rcp_data.scoring.agreement.judged import excluded_mask, read_excluded

    qrels = read_release_table(release.root / subset_file(sub.subset, "qrels"), "qrels",
                               ["query-id", "corpus-id", "score", "theta", "gain"])
    qids = pa.array(sub.query_ids.astype(str), pa.string())
    cands = strings(sub.corpus_ids)
    qdocs = strings(qrels.column("corpus-id"))
    keys = PairKeys(qids, vocabulary(cands, qdocs))         # every document named
    rq, rd = positions(strings(qrels.column("query-id")), qids), keys.doc_codes(qdocs)
    keep = rq >= 0                                          # rows of this subset's queries
    # the one exclusion rule of every agreement figure: excluded pairs left out
    keep &= ~excluded_mask(qrels.column("query-id"), qdocs,
                           read_excluded(release.root, sub.subset))
    values = {c: float_values(qrels.column(c)) for c in ("score", "gain", "theta")}
    rows = np.flatnonzero(keep)
    graded = rows[~np.isnan(values["theta"][rows])]
    # candidates' pairs against the kept rows' pairs
    rkey = keys.of_codes(rq[rows], rd[rows])
    order = np.argsort(rkey, kind="stable")
    sorted_keys = rkey[order]
    if (sorted_keys[1:] == sorted_keys[:-1]).any():        # a pair with two rows
        return None
    cq = np.repeat(np.arange(sub.n_queries, dtype=np.int64), np.diff(sub.offsets))
    ckey = keys.of_codes(cq, keys.doc_codes(cands))
    at = np.clip(np.searchsorted(sorted_keys, ckey), 0, max(len(rkey) - 1, 0))
    hit = (sorted_keys[at] == ckey) if len(rkey) else np.zeros(len(ckey), dtype=bool)
    src = rows[order][at] if len(rkey) else np.zeros(len(ckey), dtype=np.int64)
    pool = pd.DataFrame({"q": cq, **{c: np.where(hit, values[c][src], np.nan)
                                     for c in ("score", "gain", "theta")}})
    return (pd.DataFrame({"q": rq[graded], "score": values["score"][graded],
                          "theta": values["theta"][graded]}), pool)


def _stacked(parts: list, n_queries: list[int]) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The subsets' graded rows and joined candidates, one after the other, their queries
    numbered on from the subsets before."""
    offset, graded, pool = 0, [], []
    for (g, p), n in zip(parts, n_queries, strict=True):
        graded.append(g.assign(q=g["q"].to_numpy() + offset))
        pool.append(p.assign(q=p["q"].to_numpy() + offset))
        offset += n
    return (pd.concat(graded, ignore_index=True), pd.concat(pool, ignore_index=True), offset)


def _merged(release, data, subsets: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """:func:`_stacked`'s tables by pandas merges on the id strings (a repeated pair)."""
    # imported here, as the fallback needs it: analysis imports scipy.stats (~1 s cold)
    from rcp_data.scoring.agreement.analysis import _candidates
    from rcp_data.scoring.agreement.judged import excluded_mask, read_excluded

    graded, pool = [], []
    offset = 0
    for s in subsets:
        sub = data.subsets[s]
        q = release.table(s, "qrels", ["query-id", "corpus-id", "score", "theta", "gain"])
        q = q[~excluded_mask(q["query-id"], q["corpus-id"], read_excluded(release.root, s))]
        qpos = pd.Series(np.arange(sub.n_queries) + offset,
                         index=pd.Index(sub.query_ids.astype(str)))
        q = q[q["query-id"].isin(qpos.index)].assign(
            q=lambda f, qpos=qpos: qpos.reindex(f["query-id"]).to_numpy())
        cand = _candidates(sub).assign(q=lambda f, o=offset: f["q"] + o)
        graded.append(q.dropna(subset=["theta"]))
        pool.append(cand.merge(q[["query-id", "corpus-id", "score", "gain", "theta"]],
                               how="left", on=["query-id", "corpus-id"]))
        offset += sub.n_queries
    return pd.concat(graded, ignore_index=True), pd.concat(pool, ignore_index=True), offset


def _exp_values(data, spec: SuiteSpec) -> dict[str, np.ndarray]:
    """Per subset ``(Q, R)`` qrel-nDCG@10 with exponential gain under the paper rule."""
    from rcp_data.scoring.agreement.analysis import qrel_values

    return {s: qrel_values(sub, k=PAPER_K, rule=spec.paper_tie_rule, gain="exp")
            for s, sub in data.subsets.items()}


def recompute(root: Path, spec: SuiteSpec, per_query: pd.DataFrame, data=None,
              exp_values: dict[str, np.ndarray] | None = None
              ) -> dict[tuple[str, str], object]:
    """``{(entry subset, statistic): value}`` of every agreement number the release allows
    (``data``: the release as replay loaded it, loaded here when not given; ``exp_values``:
    :func:`_exp_values` as the replay scored them, scored here when not given)."""
    from rcp_data.scoring.replay import load_release

    data = data if data is not None else load_release(root, spec)
    groups = _subset_groups(spec, list(data.subsets))
    if exp_values is None:
        exp_values = _exp_values(data, spec)
    out = _ranking_values(per_query, spec, groups, exp_values)
    out.update(_label_values(root, spec, groups, data))
    return out


def _tolerance(entry: dict) -> float:
    if "tolerance" in entry:
        return float(entry["tolerance"])
    printed = str(entry["printed"])
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return 0.5 * 10 ** -decimals + 1e-9


def check_paper_agreement(entries: list[dict], root: Path, spec: SuiteSpec,
                          per_query: pd.DataFrame, applies: bool, reason: str,
                          where: str, data=None,
                          exp_values: dict[str, np.ndarray] | None = None) -> list[Check]:
    """The suite's recomputable agreement entries against the release: a failure when the
    paper applies to this revision, else a diff."""
    key = spec.paper_key or spec.name
    mine = [e for e in entries if e["suite"] == key]
    if not mine:
        return []
    todo = [e for e in mine if e.get("recomputable", True)]
    values = recompute(root, spec, per_query, data, exp_values)
    rows, missing = [], []
    for e in todo:
        got = values.get((e["subset"], e["statistic"]))
        if got is None:
            missing.append(e)
            continue
        if isinstance(e["value"], str):
            ok = got == e["value"]
        else:
            ok = abs(float(got) - float(e["value"])) <= _tolerance(e)
        rows.append((e, got, ok))
    off = [r for r in rows if not r[2]]
    status_bad = "failed" if applies else "diff"
    skipped = len(mine) - len(todo)
    return [Check(
        "paper-agreement", applies and not off or not applies,
        f"agreement numbers vs the paper's (E.4, C.6, Table 20, G.1, H.1; {reason})",
        expected=f"{len(todo)} recomputable values within half their last printed digit",
        found=(f"{len(rows) - len(off)} equal, {len(off)} differ, {len(missing)} not in this "
               f"release; {skipped} the release cannot recompute"),
        where=where, status="ok" if not off else status_bad,
        details=[f"{e['section']} {e['subset']} {e['statistic']}: paper {e['printed']}, "
                 f"release {got if isinstance(got, str) else round(float(got), 4)}"
                 for e, got, _ in off])]


__all__ = ["check_paper_agreement", "recompute"]
