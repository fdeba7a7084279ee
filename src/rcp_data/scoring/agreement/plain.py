"""Agreement of assessors on plain files (``rcp-data agree --qrels PRIMARY --labels NAME=QRELS``).

No release and no judge: a primary assessor's qrels, one qrels file per secondary assessor (or
label source) and, optionally, runs read as ``score --qrels`` reads them.

- Coverage: per label set its rows, topics, and the documents it shares with the primary
  assessor; a document a rater did not judge is left out of that rater's comparisons (counted,
  never an error).
- Assessors: Cohen's kappa and overlap of every pair on the documents both judged, four-grade
  and binarized at ``threshold``; Fleiss' kappa per group of assessors who share topics (found
  from the data: assessors linked by a shared topic not all of them judged), and the overlap
  of all members' relevant sets, on the documents every member judged, with and without the
  primary assessor; the grade-transition matrix primary -> each assessor.
- Ceilings: each assessor's grades (and the max, min and mean over assessors) as a run on the
  primary's qrels under nDCG@k and every requested measure, ties averaged over their orders.
- Systems (with runs): each run's per-query values under every label set, by a measure
  ``(qrels frame, run) -> per-query values`` (:func:`measure_of`: the ir-measures names of
  :mod:`rcp_data.scoring.measures`; default ``nDCG@10``),
  the leaderboards' Kendall tau-b, Spearman rho and RBO against the primary's, and label
  variation (:func:`~.variation.label_variation`): draws of one label set per topic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.errors import UsageError
from rcp_data.model.card_format import escape_cell
from rcp_data.runs.qrels_runs import ReadRun, read_run, top_rows
from rcp_data.runs.runs_in import check_name_count, run_names
from rcp_data.scoring.agreement import rankings as rk
from rcp_data.scoring.agreement import raters
from rcp_data.scoring.agreement.labelsets import LabelSet, read_label_set
from rcp_data.scoring.agreement.significance import collection_changes
from rcp_data.scoring.agreement.variation import DRAWS, SEED, label_variation
from rcp_data.scoring.measures import parse_measure
from rcp_data.scoring.qrels_score import score_qrels
from rcp_data.scoring.tied_measures import compute_tied

PRIMARY = "primary"
THRESHOLD = 2
KAPPA_METHODS = ("textbook", "study")
"""How kappa and overlap are aggregated: ``textbook`` pools every document the raters all
judged into one statistic (the statistics' definitions; the default); ``study`` computes one
statistic per topic and averages over the topics (Parry et al.'s notebooks: Fleiss' kappa per
topic and group, the primary's grade counted once per secondary member, Cohen's kappa per topic, and as overlap the per-topic share of
documents given the same grade); a topic whose statistic is undefined (every rater gave one
grade) is left out of the mean and counted."""
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f|]")
_NDCG = re.compile(r"^nDCG@(\d+)$")

Measure = Callable[[pd.DataFrame, Mapping[str, ReadRun]], Mapping[str, pd.Series]]
"""A measure: per run, its per-query values (a Series indexed by query-id) on a qrels frame
(``query-id, corpus-id, grade``); a query the measure leaves out is absent. It takes every run
at once, so the qrels are indexed once per label set."""


def _ndcg(k: int) -> Measure:
    def measure(qrels: pd.DataFrame, runs: Mapping[str, ReadRun]) -> dict[str, pd.Series]:
        s = score_qrels(qrels, runs, k=k, compare=False)
        index = list(s.queries)
        return {r: pd.Series(s.per_query[r][s.measures[0]], index=index) for r in runs}
    return measure


def _named(name: str) -> Measure:
    def measure(qrels: pd.DataFrame, runs: Mapping[str, ReadRun]) -> dict[str, pd.Series]:
        return _by_name([name], qrels, runs)[name]
    return measure


def _by_name(names: Sequence[str], qrels: pd.DataFrame, runs: Mapping[str, ReadRun]
             ) -> dict[str, dict[str, pd.Series]]:
    """Per name, per run, its per-query values by the shared measures
    (:mod:`rcp_data.scoring.measures`), every run ranked once for all ``names``."""
    keys = {n: str(parse_measure(n)) for n in names}
    s = score_qrels(qrels, runs, measures=list(dict.fromkeys(keys.values())), compare=False)
    index = list(s.queries)
    return {n: {r: pd.Series(s.per_query[r][key], index=index) for r in runs}
            for n, key in keys.items()}


def score_measures(names: Sequence[str], qrels: pd.DataFrame, runs: Mapping[str, ReadRun]
                   ) -> dict[str, Mapping[str, pd.Series]]:
    """Per measure name, per run, its per-query values on ``qrels``; the nDCG cutoffs share
    one scoring pass (the qrels indexed and each run ranked once), the other measures another
    (:mod:`rcp_data.scoring.measures`, as ``score --qrels --measure`` computes them)."""
    cutoffs = {n: int(m.group(1)) for n in names if (m := _NDCG.match(n)) and int(m.group(1))}
    out: dict[str, Mapping[str, pd.Series]] = {}
    if cutoffs:
        s = score_qrels(qrels, runs, k=list(cutoffs.values()), compare=False)
        index = list(s.queries)
        for n, k in cutoffs.items():
            name = s.measures[list(dict.fromkeys(cutoffs.values())).index(k)]
            out[n] = {r: pd.Series(s.per_query[r][name], index=index) for r in runs}
    rest = [n for n in names if n not in out]
    if rest:
        out.update(_by_name(rest, qrels, runs))
    return out


def measure_of(name: str) -> Measure:
    """The measure named ``name`` (ir-measures names: ``nDCG@10``, ``P(rel=2)@10``,
    ``RR(rel=2)@10``, ``R@100``, ``AP``, ``nDCG(judged_only=True)@10``, ...); a UsageError
    naming what is wrong otherwise."""
    m = _NDCG.match(name)
    if m and int(m.group(1)) > 0:
        return _ndcg(int(m.group(1)))
    parse_measure(name)
    return _named(name)


def check_label_name(name: str) -> str:
    """``name`` if it can label a table row (no control character, no '|', not empty)."""
    bad = _UNSAFE.search(name)
    if bad is None and name.strip():
        return name
    what = "is empty" if bad is None else f"holds {bad.group()!r}"
    raise UsageError(f"label set name {name!r} {what}: it labels a table row, so it may hold "
                     "no control character or '|'")


@dataclass(frozen=True)
class PlainAgreement:
    """Every number of the analysis as JSON-ready values (``to_json``: ``--json``)."""

    data: dict

    def to_json(self) -> dict:
        return self.data

    def table(self) -> str:
        return render(self.data)


def _read(name: str, source: str | Path | pd.DataFrame) -> LabelSet:
    ls = read_label_set(check_label_name(name), source)
    if ls.frame.empty:
        raise UsageError(f"{ls.source}: label set {name!r} has no rows")
    frame = ls.frame.astype({"query-id": str, "corpus-id": str})
    dup = frame.duplicated(["query-id", "corpus-id"])
    if dup.any():
        raise UsageError(f"{ls.source}: label set {name!r} grades "
                         f"{frame['query-id'].iat[int(dup.argmax())]!r} / "
                         f"{frame['corpus-id'].iat[int(dup.argmax())]!r} twice")
    return LabelSet(ls.name, ls.source, frame)


def _grades(sets: Sequence[LabelSet]) -> pd.DataFrame:
    """Wide grades: one row per (query-id, corpus-id), one column per set (NaN: not judged)."""
    wide = None
    for ls in sets:
        col = ls.frame.set_index(["query-id", "corpus-id"])["grade"].rename(ls.name)
        wide = col.to_frame() if wide is None else wide.join(col, how="outer")
    return wide


def _groups(wide: pd.DataFrame, names: Sequence[str]) -> list[list[str]]:
    """Assessors linked by a shared topic (connected components), in the order of ``names``;
    a topic every assessor judged (a shared calibration topic) links none, its documents still
    count in each group's comparisons."""
    judged = wide[list(names)].notna().groupby(level=0).any().to_numpy()
    judged = judged[~judged.all(axis=1)] if len(names) > 2 else judged
    parent = list(range(len(names)))

    def find(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x
    for row in judged:
        members = np.flatnonzero(row)
        for m in members[1:]:
            parent[find(int(m))] = find(int(members[0]))
    out: dict[int, list[str]] = {}
    for i, n in enumerate(names):
        out.setdefault(find(i), []).append(n)
    return list(out.values())


def _topic_mean(frame: pd.DataFrame, stat: Callable[[np.ndarray], float]) -> tuple[float, int]:
    """The mean over topics of ``stat`` on each topic's ``(documents, raters)`` grades, topics
    where every rater gave one grade (kappa undefined) left out; and how many were left out."""
    values, undefined = [], 0
    for _, block in frame.groupby(level=0, sort=False):
        r = block.to_numpy()
        if len(np.unique(r)) < 2:
            undefined += 1
            continue
        values.append(stat(r))
    return (float(np.mean(values)) if values else float("nan")), undefined


def _same_grade(r: np.ndarray) -> float:
    return float((r[:, 0] == r[:, 1]).mean())


def _all_same(r: np.ndarray) -> float:
    return float((r == r[:, :1]).all(axis=1).mean())


def _pair(wide: pd.DataFrame, a: str, b: str, threshold: float, method: str) -> dict:
    both = wide[[a, b]].dropna()
    x, y = both[a].to_numpy(), both[b].to_numpy()
    bx, by = (x >= threshold).astype(float), (y >= threshold).astype(float)
    out = {"a": a, "b": b, "documents": len(both),
           "topics": int(both.index.get_level_values(0).nunique())}
    if method == "study":
        binary = (both >= threshold).astype(float)
        def cohen(r: np.ndarray) -> float:
            return raters.cohen_kappa(r[:, 0], r[:, 1])
        out["cohen_kappa"], out["undefined_topics"] = _topic_mean(both, cohen)
        out["cohen_kappa_binary"], out["undefined_topics_binary"] = _topic_mean(binary, cohen)
        # the notebooks' per-document Jaccard of {grade} sets: 1 for the same grade, else 0
        out["overlap"] = _topic_mean_all(both, _same_grade)
        out["overlap_binary"] = _topic_mean_all(binary, _same_grade)
        return out
    out.update(cohen_kappa=raters.cohen_kappa(x, y), cohen_kappa_binary=raters.cohen_kappa(bx, by),
               overlap=raters.overlap(x, y, 1, exact=True),
               overlap_binary=raters.overlap(x, y, threshold))
    return out


def _topic_mean_all(frame: pd.DataFrame, stat: Callable[[np.ndarray], float]) -> float:
    values = [stat(b.to_numpy()) for _, b in frame.groupby(level=0, sort=False)]
    return float(np.mean(values)) if values else float("nan")


def _group(wide: pd.DataFrame, members: Sequence[str], threshold: float, method: str) -> dict:
    every = wide[list(members)].dropna()
    r = every.to_numpy()
    topics = sorted(set(every.index.get_level_values(0)))
    out = {"members": list(members), "topics": len(topics), "documents": len(every)}
    if method == "study":
        # the notebooks join the primary's grade onto each secondary rating of a document, so
        # the primary counts once per secondary member
        cols = [m for m in members if m != PRIMARY]
        rated = every[[PRIMARY] * len(cols) + cols] if PRIMARY in members else every
        out["fleiss_kappa"], out["undefined_topics"] = _topic_mean(rated, raters.fleiss_kappa)
        out["fleiss_kappa_binary"], out["undefined_topics_binary"] = _topic_mean(
            (rated >= threshold).astype(float), raters.fleiss_kappa)
        # as for pairs: per topic the share of documents every member gave the same grade
        out["overlap"] = _topic_mean_all(every, _all_same)
        out["overlap_binary"] = _topic_mean_all((every >= threshold).astype(float), _all_same)
        return out
    out.update(fleiss_kappa=raters.fleiss_kappa(r),
               fleiss_kappa_binary=raters.fleiss_kappa((r >= threshold).astype(float)),
               overlap=raters.overlap_all(r, 1, exact=True),
               overlap_binary=raters.overlap_all(r, threshold))
    return out


def _coverage(wide: pd.DataFrame, names: Sequence[str]) -> list[dict]:
    prim = wide[PRIMARY].notna()
    out = []
    for n in names:
        judged = wide[n].notna()
        out.append({"name": n, "rows": int(judged.sum()),
                    "topics": int(wide.index.get_level_values(0)[judged.to_numpy()].nunique()),
                    "shared_with_primary": int((judged & prim).sum()),
                    "not_judged_by_primary": int((judged & ~prim).sum())})
    return out


def t_interval(values: np.ndarray) -> dict:
    """Mean and 95% t-interval half-width over topics (the study's ``mean +- x``)."""
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    n = len(v)
    half = float(stats.t.ppf(0.975, n - 1) * v.std(ddof=1) / np.sqrt(n)) if n > 1 else None
    return {"mean": float(v.mean()) if n else None, "half_width": half, "topics": n}


def _ceiling_runs(wide: pd.DataFrame, secondary: Sequence[str]) -> dict[str, pd.Series]:
    """Each assessor's grades and the max/min/mean over the assessors who graded a document,
    as scores indexed by (query-id, corpus-id)."""
    sec = wide[list(secondary)]
    runs = {n: sec[n].dropna() for n in secondary}
    both = sec[sec.notna().any(axis=1)]
    runs.update({"aggregate max": both.max(axis=1), "aggregate min": both.min(axis=1),
                 "aggregate mean": both.mean(axis=1)})
    return runs


def _ceilings(wide: pd.DataFrame, secondary: Sequence[str], name: str) -> dict:
    """Each assessor's grades (and the max/min/mean over assessors) as a run on the primary's
    qrels, ``name`` over the topics that assessor judged; tied grades are averaged over their
    orders exactly (nDCG@k: tie rule ``group-mean``; every measure:
    :func:`~rcp_data.scoring.tied_measures.compute_tied`)."""
    runs = _ceiling_runs(wide, secondary)
    m = _NDCG.match(name)
    out = {}
    if m:
        primary = wide[PRIMARY].dropna().rename("grade").reset_index()
        for run, grades in runs.items():
            frame = grades.rename("score").reset_index()
            res = score_qrels(primary, {"run": frame}, k=int(m.group(1)), tie_rule="group-mean",
                              compare=False)
            judged = set(frame["query-id"])
            keep = np.array([q in judged for q in res.queries], dtype=bool)
            out[run] = t_interval(res.per_query["run"][res.measures[0]][keep])
    else:
        measure = parse_measure(name)
        prim = wide[PRIMARY].dropna()
        topics = prim.index.get_level_values(0)
        queries = pd.Index(topics.unique())
        qcode = queries.get_indexer(topics)
        grades = prim.to_numpy(np.float64)
        judged_grades = [grades[qcode == i] for i in range(len(queries))]
        positive = np.array([bool((g > 0).any()) for g in judged_grades])
        for run, scores in runs.items():
            rq = scores.index.get_level_values(0)
            qpos = queries.get_indexer(rq)
            mine = qpos >= 0
            g = prim.reindex(scores.index).to_numpy(np.float64)
            values = compute_tied(measure, qpos[mine], scores.to_numpy(np.float64)[mine],
                                  np.nan_to_num(g[mine], nan=-1.0), judged_grades,
                                  len(queries))
            keep = positive & np.isin(np.arange(len(queries)), qpos[mine])
            out[run] = t_interval(values[keep])
    rule = "group-mean (exact expectation over tie orders)" if m else \
        "exact expectation over tie orders"
    return {"measure": name, "tie_rule": rule, "runs": out}


def _clean(x):
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, float | np.floating):
        return None if np.isnan(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def _systems(sets: Sequence[LabelSet], runs: Mapping[str, ReadRun],
             per: Sequence[Mapping[str, pd.Series]], measure_name: str, *, draws: int,
             seed: int, rbo_p: float, draw_primary: bool, draw_zero: bool) -> dict:
    """The systems' section under one measure; ``per``: per label set, per run, its
    per-query values."""
    names = list(runs)
    queries = list(per[0][names[0]].index)             # the primary's kept queries
    values = np.full((len(sets), len(names), len(queries)), np.nan)
    for a, (ls, by_run) in enumerate(zip(sets, per, strict=True)):
        judged = np.isin(queries, ls.frame["query-id"].unique())
        for s, r in enumerate(names):
            v = by_run[r].reindex(queries).to_numpy(np.float64)
            if draw_zero:                                   # judged, nothing relevant: 0
                v = np.where(np.isnan(v) & judged, 0.0, v)
            values[a, s] = v
    boards = {}
    for a, ls in enumerate(sets):
        with np.errstate(invalid="ignore"):
            boards[ls.name] = np.nanmean(values[a], axis=1)
    ref = boards[PRIMARY]
    ref_order = rk.order(ref)
    compared = []
    for ls in sets[1:]:
        b = boards[ls.name]
        if np.isnan(b).any():
            continue
        compared.append({"labels": ls.name, "kendall": rk.kendall_tau_b(b, ref),
                         "spearman": rk.spearman_rho(b, ref),
                         "rbo_extrapolated": rk.rbo_extrapolated(rk.order(b), ref_order, rbo_p)
                         if rbo_p < 1.0 else None,
                         "rbo_package": rk.rbo_package(rk.order(b), ref_order, rbo_p)})
    out = {"measure": measure_name, "systems": names, "queries": len(queries),
           "leaderboards": {n: b.tolist() for n, b in boards.items()}, "against_primary": compared,
           "significance": {ls.name: collection_changes(values[0], values[a], names)
                            for a, ls in enumerate(sets) if a}}
    pool = values if draw_primary else values[1:]
    available = ~np.isnan(pool).all(axis=1)
    if len(names) >= 2 and pool.shape[0] >= 1 and available.any(axis=0).all() and draws > 0:
        var = label_variation(pool, ref, available=available, draws=draws, seed=seed,
                              rbo_p=rbo_p)
        summary = var.summary()
        if rbo_p >= 1.0:
            summary["rbo_extrapolated"] = None
        summary.update(primary_drawn=draw_primary, all_zero_drawn=draw_zero, seed=seed,
                       swap={f"{names[i]} / {names[j]}": float(p)
                             for (i, j), p in zip(rk.pair_index(len(names)), var.swap,
                                                  strict=True)})
        out["variation"] = summary
    else:
        out["variation"] = None
    return out


def agree_files(qrels: str | Path | pd.DataFrame,
                labels: Mapping[str, str | Path | pd.DataFrame],
                runs: Sequence[str | Path] | Mapping[str, str | Path | pd.DataFrame] = (), *,
                names: Sequence[str] | None = None, measure: str | Sequence[str] = "nDCG@10",
                threshold: float = THRESHOLD, groups: Sequence[Sequence[str]] | None = None,
                draws: int = DRAWS, seed: int = SEED, rbo_p: float = rk.RBO_P,
                draw_primary: bool = False, draw_zero: bool = True, ceiling_k: int = 10,
                kappa_method: str = "textbook") -> PlainAgreement:
    """The agreement of assessors on plain qrels files (see the module); ``groups``: groups of
    label set names (default: found from shared topics); ``measure``: one name or several
    (``systems`` holds the first, ``systems_by_measure`` every one); ``kappa_method``: one of
    :data:`KAPPA_METHODS`. Raises
    :class:`~rcp_data.core.errors.UsageError` or :class:`~rcp_data.core.errors.InputError`."""
    if not labels:
        raise UsageError("give at least one --labels NAME=QRELS beside --qrels")
    if PRIMARY in labels:
        raise UsageError(f"{PRIMARY!r} names the --qrels file; name the label sets otherwise")
    if not 0.0 < rbo_p <= 1.0:
        raise UsageError(f"--rbo-p must be in (0, 1], got {rbo_p}")
    if kappa_method not in KAPPA_METHODS:
        raise UsageError(f"--kappa-method must be one of {', '.join(KAPPA_METHODS)}, "
                         f"got {kappa_method!r}")
    wanted = [measure] if isinstance(measure, str) else list(dict.fromkeys(measure))
    if not wanted:
        raise UsageError("give at least one --measure")
    for m in wanted:
        measure_of(m)
    sets = [_read(PRIMARY, qrels)] + [_read(n, s) for n, s in labels.items()]
    wide = _grades(sets)
    secondary = [ls.name for ls in sets[1:]]
    primary_topics = set(sets[0].frame["query-id"])
    for ls in sets[1:]:
        if not set(ls.frame["query-id"]) & primary_topics:
            raise UsageError(f"{ls.source}: label set {ls.name!r} covers no topic of the "
                             "--qrels file")
    if groups is None:
        found = _groups(wide, secondary)
    else:
        found = [list(g) for g in groups]
        unknown = sorted({n for g in found for n in g} - set(secondary))
        if unknown:
            raise UsageError(f"--groups names an unknown label set: {unknown[0]!r}")
    pairs = [_pair(wide, a, b, threshold, kappa_method) for a, b in combinations([PRIMARY, *secondary], 2)]
    pairs = [p for p in pairs if p["documents"]]
    grp = [{"without_primary": _group(wide, g, threshold, kappa_method) if len(g) >= 2
            else None, "with_primary": _group(wide, [PRIMARY, *g], threshold, kappa_method)}
           for g in found]
    trans = {}
    for n in secondary:
        both = wide[[PRIMARY, n]].dropna()
        trans[n] = raters.transitions(both[PRIMARY].to_numpy(), both[n].to_numpy()).to_json()
    pooled = wide[[PRIMARY, *secondary]]
    stacked = [(pooled[PRIMARY], pooled[n]) for n in secondary]
    ref = pd.concat([a[b.notna() & a.notna()] for a, b in stacked]).to_numpy()
    oth = pd.concat([b[b.notna() & a.notna()] for a, b in stacked]).to_numpy()
    trans_all = raters.transitions(ref, oth).to_json()
    data = {"primary": sets[0].source, "labels": {ls.name: ls.source for ls in sets[1:]},
            "threshold": threshold, "kappa_method": kappa_method, "coverage": _coverage(wide, [PRIMARY, *secondary]),
            "pairs": pairs, "groups": grp, "transitions": trans,
            "transitions_all": trans_all, "systems": None,
            "ceilings": _ceilings(wide, secondary, f"nDCG@{ceiling_k}")}
    if any(m != f"nDCG@{ceiling_k}" for m in wanted):
        data["ceilings_by_measure"] = {m: data["ceilings"] if m == f"nDCG@{ceiling_k}" else
                                       _ceilings(wide, secondary, m)
                                       for m in dict.fromkeys([f"nDCG@{ceiling_k}", *wanted])}
    if runs:
        read = _read_runs(runs, names)
        parsed = [parse_measure(m) for m in wanted]
        if all(p.cutoff and not p.judged_only for p in parsed):
            # every measure sees only each query's top k: rank each run once, not per label set
            deepest = max(p.cutoff for p in parsed)
            read = {n: top_rows(r, deepest) for n, r in read.items()}
        per = [score_measures(wanted, ls.frame, read) for ls in sets]
        by_measure = {m: _systems(sets, read, [p[m] for p in per], m, draws=draws, seed=seed,
                                  rbo_p=rbo_p, draw_primary=draw_primary, draw_zero=draw_zero)
                      for m in wanted}
        data["systems"] = by_measure[wanted[0]]
        if len(wanted) > 1:
            data["systems_by_measure"] = by_measure
    return PlainAgreement(_clean(data))


def _f(x) -> str:
    return "–" if x is None else f"{x:.3f}"


_METHOD_NOTE = {"textbook": "pooled over the documents compared (textbook)",
                "study": "one per topic, mean over topics; overlap = share of same grades "
                         "(study)"}


def sig_alpha(s: dict) -> str:
    return next((f"{x['alpha']:g}" for x in s["significance"].values()), "–")


def render(d: dict) -> str:
    """The readable tables, one per section (every cell escaped)."""
    e = escape_cell
    lines = [f"primary assessor: {e(d['primary'], markdown=False)}; relevant at grade >= "
             f"{d['threshold']:g} for the binarized statistics; kappa and overlap: "
             f"{_METHOD_NOTE[d['kappa_method']]}", "",
             "coverage (documents a rater did not judge are left out of its comparisons):",
             "| labels | rows | topics | shared with primary | not judged by primary |",
             "|---|---|---|---|---|"]
    lines += [f"| {e(c['name'])} | {c['rows']} | {c['topics']} | {c['shared_with_primary']} | "
              f"{c['not_judged_by_primary']} |" for c in d["coverage"]]
    lines += ["", "pairs (documents both judged; overlap: Jaccard of relevant sets, four-grade "
              "= same grade >= 1):",
              "| a | b | documents | Cohen kappa | binary | overlap | binary |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {e(p['a'])} | {e(p['b'])} | {p['documents']} | {_f(p['cohen_kappa'])} | "
              f"{_f(p['cohen_kappa_binary'])} | {_f(p['overlap'])} | "
              f"{_f(p['overlap_binary'])} |" for p in d["pairs"]]
    lines += ["", "groups (Fleiss kappa on the documents every member judged; overlap: Jaccard "
              "of the relevant sets of every member):",
              "| group | with primary | topics | documents | Fleiss kappa | binary | overlap | "
              "binary |", "|---|---|---|---|---|---|---|---|"]
    for g in d["groups"]:
        for key, flag in (("without_primary", "no"), ("with_primary", "yes")):
            x = g[key]
            if x is None:
                continue
            lines.append(f"| {e(' + '.join(x['members']))} | {flag} | {x['topics']} | "
                         f"{x['documents']} | {_f(x['fleiss_kappa'])} | "
                         f"{_f(x['fleiss_kappa_binary'])} | {_f(x['overlap'])} | "
                         f"{_f(x['overlap_binary'])} |")
    t = d["transitions_all"]
    lines += ["", "grade transitions, primary grade -> assessor grade (all assessors):",
              "| primary | " + " | ".join(f"{g:g}" for g in t["grades"]) + " | changed |",
              "|---" * (len(t["grades"]) + 2) + "|"]
    lines += [f"| {g:g} | " + " | ".join(str(c) for c in row) + f" | {_f(ch)} |"
              for g, row, ch in zip(t["grades"], t["counts"], t["changed"], strict=True)]
    for c in (d.get("ceilings_by_measure") or {"": d["ceilings"]}).values():
        lines += ["", f"ceilings: each assessor's grades as a run on the primary, "
                  f"{c['measure']}, ties {c['tie_rule']}; mean +- 95% t-interval over the "
                  "topics it judged:", "| run | mean | +- | topics |", "|---|---|---|---|"]
        lines += [f"| {e(n)} | {_f(x['mean'])} | {_f(x['half_width'])} | {x['topics']} |"
                  for n, x in c["runs"].items()]
    for s in (d.get("systems_by_measure") or {"": d["systems"]}).values():
        if not s:
            continue
        lines += ["", f"systems under {s['measure']} ({s['queries']} primary topics), "
                  "leaderboards against the primary's:",
                  "| labels | Kendall tau-b | Spearman rho | RBO extrapolated | RBO package |",
                  "|---|---|---|---|---|"]
        lines += [f"| {e(c['labels'])} | {_f(c['kendall'])} | {_f(c['spearman'])} | "
                  f"{_f(c['rbo_extrapolated'])} | {_f(c['rbo_package'])} |"
                  for c in s["against_primary"]]
        lines += ["", "score and rank changes against the primary (per collection, over the "
                  "topics both score; paired t-test, Bonferroni / Holm over its systems; "
                  f"Wilcoxon on per-topic ranks; alpha {sig_alpha(s)}):",
                  "| labels | topics | scores changed (Bonferroni) | (Holm) | ranks changed "
                  "(Wilcoxon) |", "|---|---|---|---|---|"]
        lines += [f"| {e(n)} | {x['topics']} | {x['changed_bonferroni']} | {x['changed_holm']} | "
                  f"{x['rank_changed_wilcoxon']} |" for n, x in s["significance"].items()]
        v = s["variation"]
        if v:
            lines += ["", f"label variation: {v['draws']} draws of one label set per topic "
                      f"(primary drawn: {'yes' if v['primary_drawn'] else 'no'}; all-zero "
                      f"assessor drawn: {'yes' if v['all_zero_drawn'] else 'no'}; seed "
                      f"{v['seed']}; RBO p {v['rbo_p']:g}):",
                      "| statistic | mean | 95% interval |", "|---|---|---|"]
            for key in ("kendall", "spearman", "rbo_extrapolated", "rbo_package"):
                x = v[key]
                lines.append(f"| {key} | –  | – |" if x is None else
                             f"| {key} | {_f(x['mean'])} | [{_f(x['lo'])}, {_f(x['hi'])}] |")
            lines += ["", "swap probability per system pair:", "| pair | swap |", "|---|---|"]
            lines += [f"| {e(k)} | {_f(p)} |" for k, p in v["swap"].items()]
    return "\n".join(lines) + "\n"


def _read_runs(runs, names: Sequence[str] | None) -> dict[str, ReadRun]:
    """Each run read (:func:`read_run`) under its name: the mapping's key, ``names``, or
    :func:`run_names` from the tag its reader found in the bytes it read."""
    if isinstance(runs, Mapping):
        return {n: r if isinstance(r, ReadRun) else read_run(r, str(r)) for n, r in runs.items()}
    items = list(runs)
    check_name_count(items, names)
    read = [r if isinstance(r, ReadRun) else read_run(r, str(r)) for r in items]
    labels = run_names(items, names, tags=[r.tag for r in read])
    return dict(zip(labels, read, strict=True))


__all__ = ["KAPPA_METHODS", "Measure", "PlainAgreement", "agree_files", "check_label_name",
           "measure_of", "render"]

