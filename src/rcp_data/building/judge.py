"""Attaching the judge's outputs: thetas and gains to the pool, verdicts, reranker runs
(read from the builder inputs, :mod:`rcp_data.runs`).

Every function takes plain tables and returns plain tables in the published layout.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.building.contract import RunSpec
from rcp_data.calibration.verdicts import dictionary_codes
from rcp_data.core.errors import InputError, shown
from rcp_data.core.gains import DEFAULT_LINK, ItemParams, gain
from rcp_data.model.schemas import SCHEMAS

log = logging.getLogger(__name__)

def _file_row(frame: pd.DataFrame, i: int) -> int:
    """1-based file row of position ``i`` (row labels of a table read from file, else i)."""
    label = frame.index[i]
    return int(label) + 1 if isinstance(label, int | np.integer) else i + 1


def attach_gains(
    pool: pd.DataFrame,
    upstream_qrels: pd.DataFrame,
    thetas: pd.DataFrame,
    params: ItemParams,
    *,
    link: str = DEFAULT_LINK,
    source: str = "judge/thetas.parquet",
    query_ids: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Give every pool document its theta and gain; return ``(qrels, pool)``.

    ``qrels`` has one row per (query, document) of the pool (excluded documents included: they
    leave rankings and ideals at evaluation time), then one per upstream-labelled document outside it (``gain`` 0.0,
    ``theta`` null). A pool document without a theta, or a theta for a document outside the
    pool of a released query, is an error. ``pool.judged`` is set. ``query_ids``: the released
    queries in order (default: those of the pool); a query whose pool is empty keeps its
    upstream-labelled rows.
    """
    th = thetas[["query-id", "corpus-id", "theta"]].astype({"query-id": str, "corpus-id": str})
    if query_ids is None:
        query_ids = list(pd.unique(pool["query-id"]))
    released = set(query_ids)
    th = th[th["query-id"].isin(released)]
    dup = th.duplicated(["query-id", "corpus-id"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        # the row in the file: ``thetas`` keeps the file's row labels through filtering
        raise InputError(f"duplicate theta for query {th['query-id'].iloc[i]!r}, document "
                         f"{th['corpus-id'].iloc[i]!r}", path=source, row=_file_row(th, i))
    merged = pool.merge(th, on=["query-id", "corpus-id"], how="left", indicator=True)
    missing = merged[(merged["_merge"] == "left_only") & ~merged["excluded"]]
    if len(missing):
        r = missing.iloc[0]
        raise InputError(
            f"{len(missing)} pool document(s) have no theta, e.g. query {r['query-id']!r}, "
            f"document {r['corpus-id']!r}", path=source, field="theta")
    outside = th.merge(pool[["query-id", "corpus-id"]], how="left", indicator=True)
    outside = outside[outside["_merge"] == "left_only"]
    if len(outside):
        r = outside.iloc[0]
        raise InputError(
            f"{len(outside)} theta(s) name documents outside the pool, e.g. query "
            f"{r['query-id']!r}, document {r['corpus-id']!r}", path=source, field="corpus-id")
    theta = merged["theta"].to_numpy(dtype=np.float64)
    judged = ~np.isnan(theta)
    bad = judged & ~np.isfinite(theta)
    if bad.any():
        r = merged[bad].iloc[0]
        raise InputError(f"theta {r['theta']!r} is not finite for query {r['query-id']!r}, "
                         f"document {r['corpus-id']!r}", path=source, field="theta")
    pool = pool.copy()
    pool["judged"] = judged
    grades = upstream_qrels[["query-id", "corpus-id", "score"]]
    dup = grades.duplicated(["query-id", "corpus-id"])
    if dup.any():
        r = grades[dup].iloc[0]
        raise InputError(f"the upstream qrels label query {r['query-id']!r}, document "
                         f"{r['corpus-id']!r} more than once", field="score")
    labelled = merged[["query-id", "corpus-id", "excluded"]].merge(grades, how="left")
    g = np.where(judged, gain(np.where(judged, theta, 0.0), params, link), 0.0)
    in_pool = pd.DataFrame({
        "query-id": merged["query-id"].to_numpy(),
        "corpus-id": merged["corpus-id"].to_numpy(),
        "score": labelled["score"].fillna(0).to_numpy(dtype=np.int64),
        "gain": g,
        "theta": np.where(judged, theta, np.nan),
    })
    out = grades.merge(pool[["query-id", "corpus-id"]], how="left", indicator=True)
    out = out[(out["_merge"] == "left_only") & out["query-id"].isin(released)]
    out = out.sort_values(["query-id", "corpus-id"], kind="stable")
    outside_rows = pd.DataFrame({
        "query-id": out["query-id"].to_numpy(),
        "corpus-id": out["corpus-id"].to_numpy(),
        "score": out["score"].to_numpy(dtype=np.int64),
        "gain": 0.0,
        "theta": np.nan,
    })
    order = {q: i for i, q in enumerate(query_ids)}
    qrels = pd.concat([in_pool.assign(_o=0), outside_rows.assign(_o=1)], ignore_index=True)
    qrels["_q"] = qrels["query-id"].map(order)
    qrels = qrels.sort_values(["_q", "_o"], kind="stable").drop(columns=["_q", "_o"])
    return qrels.reset_index(drop=True), pool


def ingest_run(run: pd.DataFrame, pool: pd.DataFrame, spec: RunSpec, *, source: str) -> pd.DataFrame:
    """Check a run against the pool and give it ``rank_by_score`` and ``stored_position``.

    Every pool document of every released query must be scored exactly once; a document
    outside the pool, a duplicate line or a non-finite score is an error naming file and line.
    """
    run = run.reset_index(drop=True)
    line = run["_line"].to_numpy() if "_line" in run.columns else np.arange(1, len(run) + 1)
    scores = run["score"].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(scores)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"score {shown(scores[i])} is not finite", path=source, row=int(line[i]),
                         field="score")
    released = set(pool["query-id"])
    run = run[run["query-id"].isin(released)]
    line = line[run.index.to_numpy()]
    run = run.reset_index(drop=True)
    dup = run.duplicated(["query-id", "corpus-id"])
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"duplicate line for query {run['query-id'].iloc[i]!r}, document "
                         f"{run['corpus-id'].iloc[i]!r}", path=source, row=int(line[i]))
    check = run.merge(pool[["query-id", "corpus-id"]], how="outer", indicator=True)
    extra = check[check["_merge"] == "left_only"]
    if len(extra):
        r = extra.iloc[0]
        i = int(np.flatnonzero(((run["query-id"] == r["query-id"])
                                & (run["corpus-id"] == r["corpus-id"])).to_numpy())[0])
        raise InputError(f"run names document {r['corpus-id']!r} outside the pool of query "
                         f"{r['query-id']!r}", path=source, row=int(line[i]), field="corpus-id")
    omitted = check[check["_merge"] == "right_only"]
    if len(omitted):
        r = omitted.iloc[0]
        raise InputError(f"run of {spec.run_id} omits {len(omitted)} pool document(s), e.g. "
                         f"query {r['query-id']!r}, document {r['corpus-id']!r}", path=source)
    out = pd.DataFrame({
        "model": spec.run_id,
        "is_judge": spec.is_judge,
        "query-id": run["query-id"].to_numpy(),
        "corpus-id": run["corpus-id"].to_numpy(),
        "score": run["score"].to_numpy(dtype=np.float64),
    })
    out["stored_position"] = out.groupby("query-id", sort=False).cumcount().astype(np.int64)
    out["rank_by_score"] = (
        out.groupby("query-id", sort=False)["score"]
        .rank(method="first", ascending=False)
        .astype(np.int64)
    )
    return out


def tournament_rows(table: pa.Table, query_ids: list[str], pool: pd.DataFrame, *,
                    source: str) -> pa.Table:
    """The Stage A rows of the released queries ``query_ids``, in the published layout.

    Every document they show must be in its query's pool (an error names the first that is
    not). Queries the release does not carry (e.g. extra queries the judge covered) are left
    out; the table keeps its row order.
    """
    codes, dictionary = dictionary_codes(table.column("query-id"))
    wanted = np.asarray(pc.is_in(dictionary, value_set=pa.array(query_ids, pa.string()))
                        .to_numpy(zero_copy_only=False), dtype=bool)
    rows = table.filter(pa.array(wanted[codes])) if len(dictionary) else table
    mine = pd.DataFrame({"query-id": pc.cast(rows.column("query-id"), pa.string()).to_numpy(
        zero_copy_only=False), "corpus-id": pc.cast(rows.column("corpus-id"), pa.string())
        .to_numpy(zero_copy_only=False)})
    check = mine.merge(pool[["query-id", "corpus-id"]].drop_duplicates(), how="left",
                       indicator=True)
    stray = np.flatnonzero((check["_merge"] == "left_only").to_numpy())
    if stray.size:
        r = mine.iloc[int(stray[0])]
        raise InputError(f"{stray.size} tournament row(s) show documents outside the pool, e.g. "
                         f"query {r['query-id']!r}, document {r['corpus-id']!r}", path=source,
                         field="corpus-id")
    schema = SCHEMAS["judge_tournament"]
    return pa.table([pc.cast(rows.column(f.name), f.type) for f in schema], schema=schema)


def bt_rows(thetas: pd.DataFrame, pool: pd.DataFrame) -> pd.DataFrame | None:
    """The Stage A Bradley-Terry scores of the pool's documents (None without ``theta_bt``)."""
    if "theta_bt" not in thetas.columns:
        return None
    th = thetas[["query-id", "corpus-id", "theta_bt"]].astype({"query-id": str, "corpus-id": str})
    keys = pool[["query-id", "corpus-id"]].drop_duplicates()
    out = keys.merge(th, how="inner", on=["query-id", "corpus-id"], sort=False)
    return out[out["theta_bt"].notna()].reset_index(drop=True)
