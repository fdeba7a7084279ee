"""Integrity checks of a release directory (the data half of ``rcp-data verify``).

Each check returns :class:`Check` records a person can read (what, expected, found, where)
and a machine can consume. Checks read plain tables and never modify anything.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from rcp_data.gains import ItemParams, gain
from rcp_data.layout import (
    OPTIONAL_COLUMNS,
    PROVENANCE_CONFIG,
    SCHEMAS,
    ReleaseDir,
    _compatible,
    corpus_files,
    criteria_columns,
    provenance_file,
    subset_file,
)
from rcp_data.pools import FUSED, rrf_fuse

log = logging.getLogger(__name__)

GAIN_TOLERANCE = 1e-12
RRF_TOLERANCE = 1e-12


@dataclass
class Check:
    """One verified property."""

    name: str
    ok: bool
    what: str
    expected: str = ""
    found: str = ""
    where: str = ""
    status: str = ""  # "ok" | "failed" | "absent" (optional table or column not present)
    details: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.status:
            self.status = "ok" if self.ok else "failed"

    def to_dict(self) -> dict:
        return asdict(self)


def _ok(name: str, what: str, found: str = "", where: str = "") -> Check:
    return Check(name, True, what, expected="", found=found, where=where)


def _fail(name: str, what: str, expected: str, found: str, where: str, details=None) -> Check:
    return Check(name, False, what, expected, found, where, details=list(details or [])[:20])


# -- configs --------------------------------------------------------------------------------
def card_configs(card_text: str) -> list[dict]:
    """The ``configs:`` list of a card's YAML front matter."""
    import yaml

    if not card_text.startswith("---"):
        return []
    front = yaml.safe_load(card_text.split("---", 2)[1]) or {}
    return list(front.get("configs", []))


def kind_of_config(name: str) -> str | None:
    for kind, cfg in PROVENANCE_CONFIG.items():
        if name == cfg:
            return kind
    for kind in ("corpus", "queries", "qrels", "top_ranked", "excluded"):
        if name.endswith(f"-{kind}"):
            return kind
    return None


def check_configs(root: Path, configs: list[dict]) -> list[Check]:
    """Every config in the card exists, with the layout's columns and types."""
    checks: list[Check] = []
    if not configs:
        return [_fail("configs", "the card declares configs", "a YAML configs: list", "none",
                      "README.md")]
    for cfg in configs:
        name = cfg.get("config_name", "?")
        kind = kind_of_config(name)
        for entry in cfg.get("data_files", []):
            pattern = entry.get("path", "")
            paths = sorted(root.glob(pattern)) if any(c in pattern for c in "*?[") else (
                [root / pattern] if (root / pattern).exists() else [])
            where = f"config {name}, split {entry.get('split')}: {pattern}"
            if not paths:
                checks.append(_fail("config-files", "config file exists", "a parquet file",
                                    "missing", where))
                continue
            if kind is None:
                continue
            for path in paths:
                schema = pq.read_schema(path)
                problems, absent = [], []
                for f in SCHEMAS[kind]:
                    if f.name not in schema.names:
                        (absent if f.name in OPTIONAL_COLUMNS.get(kind, ()) else problems).append(
                            f"missing column {f.name!r}")
                    elif not _compatible(schema.field(f.name).type, f.type) and not (
                            kind == "corpus" and f.name == "image"):
                        problems.append(f"column {f.name!r} is {schema.field(f.name).type}, "
                                        f"expected {f.type}")
                if kind == "judge_criteria" and not criteria_columns(schema.names):
                    problems.append("no C1..Cn criterion columns")
                rel = str(path.relative_to(root))
                if problems:
                    checks.append(_fail("config-columns", "columns and types of the layout",
                                        "design-note schema", "; ".join(problems),
                                        f"config {name}: {rel}"))
                elif absent:
                    checks.append(Check("config-columns", True, "optional columns present",
                                        "present when the release has them", "; ".join(absent),
                                        f"config {name}: {rel}", status="absent"))
    if not any(c.name in ("config-files", "config-columns") and not c.ok for c in checks):
        checks.append(_ok("configs", f"all {len(configs)} configs of the card exist with the "
                          "layout's columns and types", found=f"{len(configs)} configs"))
    return checks


# -- per subset -------------------------------------------------------------------------------
@dataclass
class SubsetTables:
    name: str
    qrels: pd.DataFrame
    top_ranked: pd.DataFrame
    excluded: pd.DataFrame | None
    pool: pd.DataFrame
    corpus_ids: set


def load_subset(rel: ReleaseDir, subset: str) -> SubsetTables:
    split = rel.spec.provenance_split(subset)
    top = rel.table(subset, "top_ranked")
    pool = rel.provenance("pool", split)
    qids = set(top["query-id"])
    pool = pool[pool["query-id"].isin(qids)]
    ids: set = set()
    for f in corpus_files(rel.root, rel.spec, subset):
        ids.update(pq.read_table(rel.root / f, columns=["id"]).column("id").to_pylist())
    excluded = rel.table(subset, "excluded") if rel.has(subset, "excluded") else None
    return SubsetTables(subset, rel.table(subset, "qrels"), top, excluded, pool, ids)


def check_subset(rel: ReleaseDir, t: SubsetTables, params: ItemParams, link: str) -> list[Check]:
    s = t.name
    checks: list[Check] = []
    # top_ranked ids in corpus and pool
    flat = t.top_ranked.explode("corpus-ids").dropna(subset=["corpus-ids"])
    not_in_corpus = flat[~flat["corpus-ids"].isin(t.corpus_ids)]
    checks.append(_ok("top-ranked-in-corpus", "every top_ranked id is in the corpus",
                      f"{len(flat)} ids", s) if not len(not_in_corpus) else _fail(
        "top-ranked-in-corpus", "every top_ranked id is in the corpus", "0 missing",
        f"{len(not_in_corpus)} missing", f"{s}-top_ranked",
        [f"query {q}, document {d}" for q, d in not_in_corpus.head(20).itertuples(index=False)]))
    pool_pairs = set(zip(t.pool["query-id"], t.pool["corpus-id"], strict=True))
    not_in_pool = [(q, d) for q, d in flat.itertuples(index=False) if (q, d) not in pool_pairs]
    checks.append(_ok("top-ranked-in-pool", "every top_ranked id is in provenance-pool",
                      f"{len(flat)} pairs", s) if not not_in_pool else _fail(
        "top-ranked-in-pool", "every top_ranked id is in provenance-pool", "0 missing",
        f"{len(not_in_pool)} missing", f"{s}-top_ranked",
        [f"query {q}, document {d}" for q, d in not_in_pool]))
    # exclusions
    if t.excluded is not None:
        exc = t.excluded.explode("excluded-corpus-ids").dropna()
        bad = flat.merge(exc, left_on=["query-id", "corpus-ids"],
                         right_on=["query-id", "excluded-corpus-ids"])
        checks.append(_ok("no-excluded-in-top-ranked", "no excluded id in top_ranked",
                          f"{len(exc)} exclusions", s) if not len(bad) else _fail(
            "no-excluded-in-top-ranked", "no excluded id in top_ranked", "0", str(len(bad)),
            f"{s}-top_ranked",
            [f"query {r['query-id']}, document {r['corpus-ids']}" for _, r in bad.iterrows()]))
    # gains
    q = t.qrels
    pool_keys = t.pool[["query-id", "corpus-id"]]
    if "judged" in t.pool.columns:
        pool_keys = t.pool.loc[t.pool["judged"], ["query-id", "corpus-id"]]
    else:
        pool_keys = t.pool.loc[~t.pool.get("excluded", pd.Series(False, index=t.pool.index)),
                               ["query-id", "corpus-id"]]
    judged = pool_keys.merge(q, how="left", on=["query-id", "corpus-id"])
    theta = judged["theta"].to_numpy(dtype=np.float64)
    g = judged["gain"].to_numpy(dtype=np.float64)
    missing = ~np.isfinite(theta)
    expect = np.where(missing, np.nan, gain(np.where(missing, 0.0, theta), params, link))
    wrong = (~missing) & ~(np.abs(g - expect) <= GAIN_TOLERANCE)
    outside = (~missing) & ~((g > 0) & (g < 1))
    bad_rows = judged[missing | wrong | outside]
    details = []
    for (_, r), e in zip(bad_rows.iterrows(), expect[missing | wrong | outside], strict=True):
        details.append(f"subset {s}, query {r['query-id']}, document {r['corpus-id']}: "
                       f"theta={r['theta']!r}, gain={r['gain']!r}, expected {e!r}")
    checks.append(_ok("gains", f"every judged pool document has a finite theta and gain = "
                      f"{link}(theta) within {GAIN_TOLERANCE:g}, in (0, 1)",
                      f"{len(judged)} documents", s) if not len(bad_rows) else _fail(
        "gains", f"gain = {link}(theta) for every judged pool document", "0 mismatches",
        f"{len(bad_rows)} mismatches", f"{s}-qrels", details))
    # positives in the pool or stated outside it
    pos = q[q["score"] > 0].merge(t.pool[["query-id", "corpus-id"]], how="left",
                                  indicator=True)
    lost = pos[(pos["_merge"] == "left_only") & ~(pos["theta"].isna() & (pos["gain"].fillna(0)
                                                                           == 0))]
    n_out = int((pos["_merge"] == "left_only").sum())
    checks.append(_ok("positives-accounted", "every positive qrel is in the pool or stated "
                      "outside it (theta null, gain 0)", f"{len(pos)} positives, {n_out} outside",
                      s) if not len(lost) else _fail(
        "positives-accounted", "positive qrels outside the pool have theta null and gain 0",
        "0", str(len(lost)), f"{s}-qrels",
        [f"query {r['query-id']}, document {r['corpus-id']}" for _, r in lost.iterrows()]))
    return checks


def check_pool_rule(rel: ReleaseDir, t: SubsetTables) -> list[Check]:
    """Pool sizes and ground-truth injection follow the suite's rule."""
    spec, s = rel.spec, t.name
    size, rule = spec.pool.size, spec.pool.rule
    pool = t.pool
    problems = []
    grades = t.qrels[t.qrels["score"] > 0]
    pos = set(zip(grades["query-id"], grades["corpus-id"], strict=True))
    sizes = pool.groupby("query-id", sort=False).size()
    for qid, grp in pool.groupby("query-id", sort=False):
        ranks = grp["pool_rank"].tolist()
        if ranks != list(range(1, len(grp) + 1)):
            problems.append(f"query {qid}: pool_rank is not 1..{len(grp)} in order")
        inj = grp["gt_injected"].to_numpy()
        if (grp.loc[inj, "rrf_score"] != 0).any():
            problems.append(f"query {qid}: an injected document has rrf_score != 0")
        if any((qid, d) not in pos for d in grp.loc[inj, "corpus-id"]):
            problems.append(f"query {qid}: an injected document is not a positive qrel")
        if rule == "top-k-inject":
            if len(grp) > size:
                problems.append(f"query {qid}: pool of {len(grp)} > {size}")
            if inj.any() and not inj[np.argmax(inj):].all():
                problems.append(f"query {qid}: injected documents are not at the bottom")
        else:
            fused_part = grp[grp["rrf_score"] > 0]
            if len(fused_part) > size:
                problems.append(f"query {qid}: {len(fused_part)} fused documents > {size}")
    checks = [_ok("pool-rule", f"pools follow {rule} (size {size}), injection flagged",
                  f"{len(sizes)} pools, {int(pool['gt_injected'].sum())} injected, sizes "
                  f"{int(sizes.min()) if len(sizes) else 0}-{int(sizes.max()) if len(sizes) else 0}",
                  s) if not problems else _fail("pool-rule", f"pools follow {rule}", "no problem",
                                                f"{len(problems)} problems", f"provenance-pool {s}",
                                                problems)]
    return checks


def check_fusion(rel: ReleaseDir, split: str, pool: pd.DataFrame) -> list[Check]:
    """Fusing provenance-first-stage reproduces rrf_fused and the pool's rrf_score."""
    spec = rel.spec
    rel_path = provenance_file("first_stage", split)
    if not (rel.root / rel_path).exists():
        return [Check("fusion", True, "provenance-first-stage present", "present", "absent",
                      rel_path, status="absent")]
    fs = rel.provenance("first_stage", split)
    stored = fs[fs["retriever"] == FUSED]
    fused = rrf_fuse(fs[fs["retriever"] != FUSED], spec.pool.retrievers, k=spec.pool.rrf_k)
    problems = []
    s_by_q = {q: g for q, g in stored.groupby("query-id", sort=False)}
    f_by_q = {q: g for q, g in fused.groupby("query-id", sort=False)}
    for qid, sg in s_by_q.items():
        fg = f_by_q.get(qid)
        if fg is None:
            problems.append(f"query {qid}: no first-stage runs to fuse")
            continue
        fg = fg.iloc[: len(sg)]
        if fg["corpus-id"].tolist() != sg["corpus-id"].tolist():
            problems.append(f"query {qid}: fused order differs from rrf_fused")
        elif np.max(np.abs(fg["score"].to_numpy() - sg["score"].to_numpy())) >= RRF_TOLERANCE:
            problems.append(f"query {qid}: fused scores differ from rrf_fused by >= 1e-12")
    merged = pool[pool["rrf_score"] > 0].merge(fused, on=["query-id", "corpus-id"], how="left")
    diff = np.abs(merged["rrf_score"].to_numpy() - merged["score"].to_numpy())
    if len(merged) and not np.all(diff < RRF_TOLERANCE):
        problems.append(f"{int((~(diff < RRF_TOLERANCE)).sum())} pool rrf_score values differ "
                        "from the fusion")
    if problems:
        return [_fail("fusion", "fusing provenance-first-stage reproduces rrf_fused and the "
                      "pool's rrf_score (< 1e-12, same order)", "identical", f"{len(problems)} "
                      "problems", rel_path, problems)]
    return [_ok("fusion", "fusing provenance-first-stage reproduces rrf_fused and the pool's "
                "rrf_score (< 1e-12, same order)", f"{len(s_by_q)} queries", rel_path)]


def check_optional(rel: ReleaseDir) -> list[Check]:
    """Report optional provenance tables that the release does not carry."""
    out = []
    for kind in ("first_stage", "judge_criteria", "runs"):
        for split in rel.spec.provenance_splits:
            p = provenance_file(kind, split)
            if not (rel.root / p).exists():
                out.append(Check(f"optional-{kind}", True, f"{PROVENANCE_CONFIG[kind]} present",
                                 "present", "absent", p, status="absent"))
    return out


def check_manifest_counts(rel: ReleaseDir, tables: dict[str, SubsetTables]) -> list[Check]:
    """The counts the build recorded (and the card states) equal the data."""
    manifest = rel.manifest()
    counts = manifest.get("counts", {})
    problems = []
    for s, t in tables.items():
        c = counts.get(s)
        if not c:
            continue
        found = {"queries": int(len(t.top_ranked)), "pool_pairs": int(len(t.pool)),
                 "gt_injected": int(t.pool["gt_injected"].sum())}
        for k, v in found.items():
            if k in c and int(c[k]) != v:
                problems.append(f"subset {s}: {k} recorded {c[k]}, data has {v}")
    if not counts:
        return [Check("counts", True, "build manifest counts", "present", "absent",
                      "provenance/build_manifest.json", status="absent")]
    if problems:
        return [_fail("counts", "recorded counts equal the data", "equal", f"{len(problems)} "
                      "differences", "provenance/build_manifest.json", problems)]
    return [_ok("counts", "recorded counts (queries, pool pairs, injected) equal the data",
                f"{len(tables)} subsets", "provenance/build_manifest.json")]


def run_integrity(rel: ReleaseDir, params: ItemParams, link: str,
                  configs: list[dict] | None = None) -> tuple[list[Check], dict[str, SubsetTables]]:
    """All data checks of a release directory."""
    checks: list[Check] = []
    if configs is not None:
        checks += check_configs(rel.root, configs)
    tables: dict[str, SubsetTables] = {}
    for s in rel.spec.subset_names:
        if not (rel.root / subset_file(s, "top_ranked")).exists():
            checks.append(_fail("subset-present", "every subset of the suite is present",
                                "present", "missing", s))
            continue
        t = load_subset(rel, s)
        tables[s] = t
        checks += check_subset(rel, t, params, link)
        checks += check_pool_rule(rel, t)
    for split in rel.spec.provenance_splits:
        if (rel.root / provenance_file("pool", split)).exists():
            checks += check_fusion(rel, split, rel.provenance("pool", split))
    checks += check_optional(rel)
    checks += check_manifest_counts(rel, tables)
    log.info("integrity: %d checks, %d failed", len(checks), sum(not c.ok for c in checks))
    return checks, tables


def dumps(checks: list[Check]) -> str:
    return json.dumps([c.to_dict() for c in checks], indent=2)
