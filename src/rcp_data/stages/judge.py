"""Attaching the judge's outputs: thetas and gains to the pool, verdicts, reranker runs.

Every function takes plain tables and returns plain tables in the published layout.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.errors import InputError, NotFoundError, shown
from rcp_data.core.gains import DEFAULT_LINK, ItemParams, gain
from rcp_data.core.io import read_json, read_parquet
from rcp_data.model.schemas import SCHEMAS, criteria_columns
from rcp_data.stages.calibration.verdicts import dictionary_codes

log = logging.getLogger(__name__)

# Builder-input tables may carry the provenance split (ViDoRe: the domain) when query ids
# repeat across splits; rows are then matched by (split, query-id).
SPLIT_COLUMN = "split"


def ids_as_text(frame: pd.DataFrame, columns: tuple[str, ...] = ("query-id", "corpus-id")
                ) -> pd.DataFrame:
    """``frame`` with its id columns as text; a null id stays null (for the checks to name)."""
    frame = frame.copy()
    for col in columns:
        if col in frame.columns:
            values = frame[col]
            frame[col] = values.astype(object).where(values.isna(), values.astype(str))
    return frame


def for_split(frame: pd.DataFrame, split: str) -> pd.DataFrame:
    """Rows of a builder-input table that belong to provenance split ``split``."""
    if SPLIT_COLUMN not in frame.columns:
        return frame
    return frame[frame[SPLIT_COLUMN].astype(str) == split]


def table_for_split(table: pa.Table, split: str) -> pa.Table:
    """:func:`for_split` of an arrow table."""
    if SPLIT_COLUMN not in table.column_names:
        return table
    col = pc.cast(table.column(SPLIT_COLUMN), pa.string())
    return table.filter(pc.equal(col, split))


@dataclass(frozen=True)
class JudgeInfo:
    """Who judged: ``judge/judge.json`` of the builder inputs."""

    model: str
    revision: str
    short: str
    synthetic: bool = False          # a generated judge (``"synthetic": true`` in judge.json)

    @classmethod
    def read(cls, path: Path) -> JudgeInfo:
        data = read_json(path)
        if not isinstance(data, dict):
            raise InputError("judge.json must be a JSON object", path=str(path))
        for key in ("model", "short"):
            if not data.get(key):
                raise InputError(f"missing key {key!r}", path=str(path), field=key)
        return cls(model=data["model"], revision=str(data.get("revision", "")),
                   short=data["short"], synthetic=data.get("synthetic") is True)


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


def check_verdicts(criteria: pd.DataFrame, params: ItemParams, *, source: str) -> pd.DataFrame:
    """Validate the verdict table against the item parameters; return it in layout order."""
    for col in ("query-id", "call_index", "corpus-id"):
        if col not in criteria.columns:
            raise InputError(f"missing column {col!r}", path=source, field=col)
    crit = criteria_columns(list(criteria.columns))
    if crit != params.criteria:
        raise InputError(
            f"the verdict table has criteria {crit} but the item parameters have "
            f"{params.n_criteria} ({params.criteria}); they must match", path=source)
    frame = criteria.copy()
    if "finish_reason" not in frame.columns:
        frame["finish_reason"] = "stop"
    for c in crit:
        vals = frame[c]
        ok = vals.isna() | vals.isin([0, 1])
        if not ok.all():
            i = int(np.flatnonzero(~ok.to_numpy())[0])
            raise InputError(f"verdict {shown(vals.iloc[i])} is not 0 or 1", path=source, row=i + 1,
                             field=c)
    extra = [SPLIT_COLUMN] if SPLIT_COLUMN in frame.columns else []
    return frame[["query-id", "call_index", "corpus-id", *crit, "finish_reason", *extra]]


@dataclass(frozen=True)
class RunSpec:
    """One reranker's (or judge strategy's) run, from ``runs/runs.json``."""

    file: str
    model: str
    short: str = ""
    is_judge: bool = False


def read_runs_json(path: Path) -> list[RunSpec]:
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("runs.json must be a JSON list of runs", path=str(path))
    specs = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError(f"a run must be a JSON object, got {entry!r}", path=str(path),
                             row=i + 1)
        for key in ("file", "model"):
            if key not in entry:
                raise InputError(f"missing key {key!r}", path=str(path), row=i + 1, field=key)
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise InputError(f"{key} {entry[key]!r} is not a name", path=str(path),
                                 row=i + 1, field=key)
        if Path(entry["file"]).name != entry["file"] or entry["file"].startswith("."):
            raise InputError(f"file {entry['file']!r} must name a file inside runs/",
                             path=str(path), row=i + 1, field="file")
        if any(s.model == entry["model"] for s in specs):
            raise InputError(f"model {entry['model']!r} is listed twice", path=str(path),
                             row=i + 1, field="model")
        specs.append(RunSpec(entry["file"], entry["model"], entry.get("short", ""),
                             bool(entry.get("is_judge", False))))
    return specs


def read_run_file(path: Path) -> pd.DataFrame:
    """A run as ``query-id, corpus-id, score`` (and ``rank`` when the file has one) in stored
    order, from a TREC run or parquet; ``_line`` is each row's line in the file."""
    path = Path(path)
    if not path.exists():
        raise NotFoundError("file not found", path=str(path))
    if path.suffix == ".parquet":
        frame = read_parquet(path, required=("query-id", "corpus-id", "score"),
                             what="a run").to_pandas()
        keep = ["query-id", "corpus-id", "score"] + [c for c in ("rank", SPLIT_COLUMN)
                                                     if c in frame.columns]
        frame = ids_as_text(frame[keep])
        frame["_line"] = np.arange(1, len(frame) + 1)
        return frame
    rows = []
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                                 path=str(path), row=n) from None
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 5:
                raise InputError(f"expected 'qid Q0 docid rank score [tag]', got {line.strip()!r}",
                                 path=str(path), row=n)
            try:
                score = float(parts[4])
            except ValueError as exc:
                raise InputError(f"score {parts[4]!r} is not a number", path=str(path), row=n,
                                 field="score") from exc
            try:
                rank = int(parts[3])
            except ValueError as exc:
                raise InputError(f"rank {parts[3]!r} is not an integer", path=str(path), row=n,
                                 field="rank") from exc
            rows.append((parts[0], parts[2], score, rank, n))
    frame = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score", "rank", "_line"])
    return frame


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
        raise InputError(f"run of {spec.model} omits {len(omitted)} pool document(s), e.g. "
                         f"query {r['query-id']!r}, document {r['corpus-id']!r}", path=source)
    out = pd.DataFrame({
        "model": spec.model,
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
