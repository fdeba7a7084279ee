"""``verify --sources``: the released queries, qrels, exclusions and corpus equal the upstream.

The suite's own source reader (``[source] read`` of its spec, :mod:`rcp_data.sources.registry`)
reads the upstream as the build read it: the ir_datasets cache (TREC-DL, NanoBEIR), the files
in the project's reference data (BRIGHT, ViDoRe), or the generator (the SYNTHETIC demo). Its corpus
comes with the documented repair applied, so corpus texts compare as released. When the
reader cannot read the source here, the checks are reported skipped with its reason.

- ``sources-queries``: the same query ids, texts (and instructions);
- ``sources-qrels``: every upstream grade of a released query is a qrels row with that
  ``score``; every other qrels row is a pooled document upstream never labelled, scored 0;
- ``sources-excluded``: the excluded ids of each query are the upstream's;
- ``sources-corpus``: the same documents, in the build's order, with the same texts (and
  titles); mismatches are listed by id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rcp_data.checks.reports import MAX_DETAILS, Check
from rcp_data.core.errors import RcpDataError
from rcp_data.model.layout import corpus_files
from rcp_data.model.release import Release
from rcp_data.sources.base import CorpusReader, SubsetSource

log = logging.getLogger(__name__)

CORPUS_COLUMNS = ("id", "title", "text")


def check_sources(rel: Release, options: dict | None = None, *,
                  corpus: bool = True) -> list[Check]:
    """Compare the release with the upstream its suite's reader gives (``options``: the
    reader's, as ``build --source-option``); ``corpus`` False leaves the corpus out."""
    from rcp_data.sources.registry import read_suite

    spec = rel.spec
    try:
        source = read_suite(spec, options)
    except (RcpDataError, ImportError, OSError) as exc:
        reason = getattr(exc, "message", None) or str(exc)
        return [Check("sources", True, "the release equals its upstream source",
                      expected=f"the {spec.name} source readable here",
                      found=f"skipped: the source is not readable here ({reason})",
                      where=spec.source.read, status="skipped")]
    queries, qrels, excluded = [], [], []
    subsets = [s for s in spec.subset_names if rel.has(s, "queries")]
    for s in subsets:
        up = source.subsets.get(s)
        if up is None:
            queries.append(f"subset {s}: the upstream source has no such subset")
            continue
        queries += _queries(rel, s, up)
        qrels += _qrels(rel, s, up)
        excluded += _excluded(rel, s, up)
    checks = [
        _check("sources-queries", "query ids and texts equal the upstream's", queries, subsets),
        _check("sources-qrels", "every upstream grade is a qrels score; other rows score 0",
               qrels, subsets),
        _check("sources-excluded", "each query's excluded ids are the upstream's", excluded,
               subsets),
    ]
    if not corpus:
        checks.append(Check("sources-corpus", True, "corpus texts equal the upstream's",
                            found="skipped: --quick did not download the corpus",
                            where="corpus", status="skipped"))
        return checks
    problems, seen, n_docs = [], set(), 0
    for s in subsets:
        up = source.subsets.get(s)
        files = tuple(corpus_files(rel.root, spec, s))
        if up is None or files in seen:
            continue
        seen.add(files)
        found, n = _corpus(rel, files, up.corpus)
        problems += found
        n_docs += n
    checks.append(Check("sources-corpus", not problems, "every corpus document equals the "
                        "upstream's after the documented repair (ids in order, texts, titles)",
                        expected="equal", found=f"{n_docs:,} documents, {len(problems)} "
                        "problems", where="corpus", details=problems))
    return checks


def _check(name: str, what: str, problems: list[str], subsets: list[str]) -> Check:
    return Check(name, not problems, what, expected="equal",
                 found=f"{len(subsets)} subsets, {len(problems)} differences",
                 where=", ".join(subsets), details=problems)


def _queries(rel: Release, subset: str, up: SubsetSource) -> list[str]:
    mine = rel.table(subset, "queries")
    theirs = up.queries.astype({"id": str})
    cols = ["text"] + (["instruction"] if "instruction" in mine.columns else [])
    merged = mine.merge(theirs, on="id", how="outer", suffixes=("", "_up"), indicator=True)
    out = [f"subset {subset}: query {q} is not upstream"
           for q in merged.loc[merged["_merge"] == "left_only", "id"]]
    out += [f"subset {subset}: upstream query {q} is missing"
            for q in merged.loc[merged["_merge"] == "right_only", "id"]]
    both = merged[merged["_merge"] == "both"]
    for col in cols:
        if f"{col}_up" not in both.columns:
            out.append(f"subset {subset}: the upstream has no {col!r}")
            continue
        differ = both[both[col].fillna("") != both[f"{col}_up"].fillna("")]
        out += [f"subset {subset}: query {q}: {col} differs from the upstream"
                for q in differ["id"]]
    return out


def _qrels(rel: Release, subset: str, up: SubsetSource) -> list[str]:
    mine = rel.table(subset, "qrels", ["query-id", "corpus-id", "score"])
    released = set(mine["query-id"]) | set(rel.table(subset, "queries", ["id"])["id"])
    theirs = up.qrels.astype({"query-id": str, "corpus-id": str})
    theirs = theirs[theirs["query-id"].isin(released)]
    merged = theirs[["query-id", "corpus-id", "score"]].merge(
        mine, on=["query-id", "corpus-id"], how="outer", suffixes=("_up", ""), indicator=True)
    out = [f"subset {subset}: query {r['query-id']}, document {r['corpus-id']}: upstream grade "
           f"{int(r['score_up'])}, no qrels row"
           for _, r in merged[merged["_merge"] == "left_only"].iterrows()]
    both = merged[merged["_merge"] == "both"]
    differ = both[both["score"].astype("int64") != both["score_up"].astype("int64")]
    out += [f"subset {subset}: query {r['query-id']}, document {r['corpus-id']}: score "
            f"{int(r['score'])}, upstream grade {int(r['score_up'])}"
            for _, r in differ.iterrows()]
    extra = merged[(merged["_merge"] == "right_only") & (merged["score"] != 0)]
    out += [f"subset {subset}: query {r['query-id']}, document {r['corpus-id']}: score "
            f"{int(r['score'])}, but the upstream has no grade" for _, r in extra.iterrows()]
    # a row the upstream does not have is a pooled document (scored 0)
    ungraded = merged.loc[merged["_merge"] == "right_only", ["query-id", "corpus-id"]]
    pool = rel.provenance("pool", rel.spec.provenance_split(subset), ["query-id", "corpus-id"])
    stray = ungraded.merge(pool, how="left", indicator=True)
    out += [f"subset {subset}: query {r['query-id']}, document {r['corpus-id']}: a qrels row "
            "neither upstream nor in the pool"
            for _, r in stray[stray["_merge"] == "left_only"].iterrows()]
    return out


def _excluded(rel: Release, subset: str, up: SubsetSource) -> list[str]:
    def as_sets(frame: pd.DataFrame | None) -> dict[str, set[str]]:
        if frame is None:
            return {}
        return {str(q): set(map(str, ids)) for q, ids in zip(
            frame["query-id"], frame["excluded-corpus-ids"], strict=True) if len(ids)}

    mine = as_sets(rel.table(subset, "excluded") if rel.has(subset, "excluded") else None)
    theirs = as_sets(up.excluded)
    return [f"subset {subset}: query {q}: excluded {sorted(mine.get(q, set()))}, upstream "
            f"{sorted(theirs.get(q, set()))}" for q in sorted(set(mine) | set(theirs))
            if mine.get(q) != theirs.get(q)]


def _release_batches(rel: Release, files: tuple[str, ...], columns: list[str]
                     ) -> Iterator[pa.Table]:
    for f in files:
        yield from (pa.Table.from_batches([b]) for b in pq.ParquetFile(rel.root / f)
                    .iter_batches(columns=columns, batch_size=65_536))


def _upstream_batches(corpus: CorpusReader, columns: list[str]) -> Iterator[pa.Table]:
    for b in corpus.batches():
        yield pa.Table.from_batches([b]).select(columns)


def _aligned(a: Iterator[pa.Table], b: Iterator[pa.Table]
             ) -> Iterator[tuple[pa.Table | None, pa.Table | None]]:
    """Equal-length slices of two table streams (None for the side that ran out)."""
    ta = tb = None
    while True:
        if ta is None or ta.num_rows == 0:
            ta = next(a, None)
        if tb is None or tb.num_rows == 0:
            tb = next(b, None)
        if ta is None or tb is None:
            if ta is not None or tb is not None:
                yield ta, tb
            return
        n = min(ta.num_rows, tb.num_rows)
        yield ta.slice(0, n), tb.slice(0, n)
        ta, tb = ta.slice(n), tb.slice(n)


def _corpus(rel: Release, files: tuple[str, ...], upstream: CorpusReader
            ) -> tuple[list[str], int]:
    """Mismatches of a release corpus against the upstream stream, by id; documents read."""
    have = set(pq.read_schema(rel.root / files[0]).names)
    up_schema = upstream.schema.names if upstream.schema is not None else list(CORPUS_COLUMNS)
    columns = [c for c in CORPUS_COLUMNS if c in have and c in up_schema]
    problems: list[str] = []
    position = 0
    for mine, theirs in _aligned(_release_batches(rel, files, columns),
                                 _upstream_batches(upstream, columns)):
        if mine is None or theirs is None:
            side = "the release has more documents" if theirs is None else \
                "the upstream has more documents"
            first = (mine if theirs is None else theirs).column("id")[0].as_py()
            problems.append(f"{side} than the other, from position {position} (id {first})")
            break
        for col in columns:
            a = mine.column(col).cast(pa.string())
            b = theirs.column(col).cast(pa.string())
            same = pc.fill_null(pc.equal(a, b), False)
            same = pc.or_(same, pc.and_(pc.is_null(a), pc.is_null(b)))
            for i in pc.indices_nonzero(pc.invert(same)).to_pylist():
                if len(problems) >= MAX_DETAILS:
                    break
                if col == "id":
                    problems.append(f"position {position + i}: id {a[i].as_py()}, upstream "
                                    f"{b[i].as_py()}")
                else:
                    problems.append(f"document {mine.column('id')[i].as_py()}: {col} differs "
                                    "from the upstream")
        position += mine.num_rows
        if len(problems) >= MAX_DETAILS:
            problems.append("(stopped after the first differences)")
            break
    return problems, position


__all__ = ["check_sources"]
