"""The shared build: sources + builder inputs -> a release directory in the published layout.

Stages (each plain tables in, plain tables out): first stage (given runs, BM25 when absent)
-> RRF fusion -> pools -> judge attach (thetas, gains, verdicts, runs) -> layout writer.

Order of work: the output folder is checked (:mod:`rcp_data.core.outputs`: never an existing
folder of the user's, never the inputs), then every input (:mod:`rcp_data.building.input_checks`);
only then is the release written, to a temporary folder beside ``out`` that is moved into place
in one rename at the very end, after everything that can fail (``finish``, e.g. the card,
runs inside it too). On any error the temporary folder is deleted; after a kill, the next
build of the same ``out`` deletes it.
"""

from __future__ import annotations

import logging
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.building.contract import THETAS_FILE, TOURNAMENT_FILE, BuildInputs, calibrated_file
from rcp_data.building.input_checks import COMPUTED_RETRIEVERS, validate_build
from rcp_data.building.judge import attach_gains, bt_rows, ingest_run, tournament_rows
from rcp_data.building.pools import (
    build_pools,
    check_known_ids,
    graded_outside,
    normalize_run,
    rrf_fuse,
)
from rcp_data.core.errors import InputError
from rcp_data.core.files import FileEntry, sha256_file
from rcp_data.core.gains import DEFAULT_LINK, gain
from rcp_data.core.outputs import check_output_dir, output_dir
from rcp_data.core.progress import progress
from rcp_data.core.specs import SuiteSpec
from rcp_data.core.version import __version__
from rcp_data.judging.tables import judging_record
from rcp_data.model.layout import (
    RELEASE,
    provenance_file,
    shard_name,
    subset_file,
)
from rcp_data.model.manifest import (
    BuildManifest,
    CalibrationRecord,
    FirstStageRecord,
    JudgeRecord,
    PartsProvenance,
    RunOrigin,
)
from rcp_data.model.schemas import SCHEMAS, judge_criteria_schema
from rcp_data.model.suite import write_spec_copy
from rcp_data.model.tables import corpus_record, write_gains, write_parquet
from rcp_data.sources.base import CorpusReader, SubsetSource, SuiteSource

log = logging.getLogger(__name__)

CORPUS_SHARD_ROWS = 1_000_000


@dataclass
class SubsetBuild:
    """Everything built for one subset (plain tables in layout order)."""

    name: str
    queries: pd.DataFrame
    qrels: pd.DataFrame
    top_ranked: pd.DataFrame
    excluded: pd.DataFrame | None
    pool: pd.DataFrame
    first_stage: pd.DataFrame
    runs: pd.DataFrame
    criteria: pd.DataFrame
    counts: dict = field(default_factory=dict)
    tournament: pa.Table | None = None
    bt: pd.DataFrame | None = None


def computed_run(spec: SuiteSpec, source: SubsetSource, retriever: str) -> pd.DataFrame:
    """A first-stage run the build computes when none is given: BM25 (bm25s) or a dense
    retriever of ``[pool] dense`` (:mod:`rcp_data.building.dense`), ``[pool] size`` deep."""
    if retriever in spec.pool.dense:
        from rcp_data.building.dense import dense_run, spec_model

        return dense_run(source.corpus, source.queries, spec_model(spec, retriever),
                         depth=spec.pool.size, retriever=retriever)
    from rcp_data.building.bm25 import bm25_run  # optional stage: only when no run is given

    run = bm25_run(source.corpus, source.queries, depth=spec.pool.size)
    return run[run["query-id"].isin(set(source.queries["id"]))]


def computed_record(spec: SuiteSpec, retriever: str) -> FirstStageRecord:
    """The record of a run rcp-data computes: BM25, or a ``[pool] dense`` model's."""
    if retriever in spec.pool.dense:
        return FirstStageRecord(retriever, True, "dense", spec.pool.dense[retriever])
    return FirstStageRecord(retriever, True, "bm25")


def run_records(spec: SuiteSpec, given: set[str], computed: dict[str, FirstStageRecord], *,
                generated: bool = False) -> tuple[FirstStageRecord, ...]:
    """How each fused retriever's run of a build came about, in fusion order: a given run
    (``given``: the retrievers of the builder inputs' ``first_stage/``) is computed (or
    generated) when ``first_stage.json`` says so (``computed``), else given (``generated``:
    the build says every given part was generated); a missing one the build computes."""
    out = []
    for r in spec.pool.retrievers:
        if r in given:
            out.append(computed.get(r) or FirstStageRecord(r, generated=generated))
        elif r in COMPUTED_RETRIEVERS or r in spec.pool.dense:
            out.append(computed_record(spec, r))
    return tuple(out)


def first_stage_for(source: SubsetSource, inputs: BuildInputs, spec: SuiteSpec) -> pd.DataFrame:
    """The subset's first-stage runs (BM25 and ``[pool] dense`` computed when not given)."""
    qids = set(source.queries["id"])
    parts = []
    for retriever in spec.pool.retrievers:
        run = inputs.first_stage.get(retriever)
        if run is None and (retriever in COMPUTED_RETRIEVERS or retriever in spec.pool.dense):
            parts.append(computed_run(spec, source, retriever))
            continue
        if run is None:
            continue
        src = run.attrs.get("source", retriever)
        mine = run[run["query-id"].astype(str).isin(qids)]
        check_known_ids(mine, source.corpus, source=src)
        parts.append(normalize_run(mine, retriever, source=src))
    if not parts:
        raise InputError(f"no first-stage run for subset {source.name!r}",
                         path=str(inputs.root or "inputs"))
    return pd.concat(parts, ignore_index=True)


def build_subset(spec: SuiteSpec, source: SubsetSource, inputs: BuildInputs,
                 link: str = DEFAULT_LINK) -> SubsetBuild:
    """Pools, gains, verdicts and runs of one subset, from the inputs of its provenance split
    (:meth:`BuildInputs.only_split`)."""
    queries = source.queries.astype({"id": str}).reset_index(drop=True)
    qids = queries["id"].tolist()
    qrels_up = source.qrels.astype({"query-id": str, "corpus-id": str})
    qrels_up = qrels_up[qrels_up["query-id"].isin(set(qids))]
    excluded_map: dict[str, set[str]] = {}
    if source.excluded is not None and len(source.excluded):
        for q, ids in zip(source.excluded["query-id"], source.excluded["excluded-corpus-ids"],
                          strict=True):
            excluded_map[str(q)] = set(map(str, ids))
    runs = first_stage_for(source, inputs, spec)
    fused = rrf_fuse(runs, spec.pool.retrievers, k=spec.pool.rrf_k)
    never = set(source.corpus.facts().empty_ids)  # empty texts (validated: the spec allows them)
    pool = build_pools(fused, qrels_up, qids, rule=spec.pool.rule, size=spec.pool.size,
                       grade_positive=spec.grade_positive,
                       excluded=excluded_map, never_pool=never)
    thetas = inputs.thetas
    theta_src = str(calibrated_file(inputs.root, THETAS_FILE)) if inputs.root else "thetas"
    qrels, pool = attach_gains(pool, qrels_up, thetas, inputs.item_params, link=link,
                               source=theta_src, query_ids=qids)
    top = pool[~pool["excluded"]].groupby("query-id", sort=False)["corpus-id"].agg(list)
    top_ranked = pd.DataFrame({"query-id": qids,
                               "corpus-ids": [top.get(q, []) for q in qids]})
    excluded = None
    if excluded_map:
        excluded = pd.DataFrame({
            "query-id": [q for q in qids if q in excluded_map],
            "excluded-corpus-ids": [sorted(excluded_map[q]) for q in qids if q in excluded_map],
        })
    # fixed candidate lists are kept whole (the pools are the lists, not their top k)
    fused_top = fused if spec.fixed_candidates else fused[fused["rank"] <= spec.pool.size]
    first_stage = pd.concat([runs, fused_top], ignore_index=True)
    run_tables = []
    for run_spec, frame in inputs.runs:
        src = str((inputs.root / "runs" / run_spec.file) if inputs.root else run_spec.file)
        run_tables.append(ingest_run(frame, pool, run_spec, source=src))
    runs_out = pd.concat(run_tables, ignore_index=True) if run_tables else pd.DataFrame(
        columns=SCHEMAS["runs"].names)
    crit = inputs.criteria
    crit = crit[crit["query-id"].isin(set(qids))].drop(columns=["split"], errors="ignore")
    stray = crit[["query-id", "corpus-id"]].merge(pool[["query-id", "corpus-id"]], how="left",
                                                  indicator=True)
    stray = stray[stray["_merge"] == "left_only"]
    if len(stray):
        r = stray.iloc[0]
        src = str(inputs.root / "judge" / "criteria.parquet") if inputs.root else "criteria"
        raise InputError(f"{len(stray)} verdict row(s) name documents outside the pool, e.g. "
                         f"query {r['query-id']!r}, document {r['corpus-id']!r}", path=src,
                         field="corpus-id")
    tournament = None
    if inputs.tournament is not None:
        src = str(inputs.root / "judge" / TOURNAMENT_FILE) if inputs.root else "tournament"
        tournament = tournament_rows(inputs.tournament, qids, pool, source=src)
    bt = bt_rows(thetas[thetas["query-id"].astype(str).isin(set(qids))], pool)
    counts = {
        "queries": len(qids),
        "pool_pairs": int(len(pool)),
        "gt_injected": int(pool["gt_injected"].sum()),
        "excluded_pairs": int(pool["excluded"].sum()),
        "queries_with_exclusions": len(excluded_map),
        "qrels_rows": int(len(qrels)),
        "positives_outside_pool": int((spec.positive_mask(qrels["score"])
                                       & qrels["theta"].isna().to_numpy()).sum()),
        "queries_without_positive": int(len(set(qids) - set(
            qrels_up.loc[spec.positive_mask(qrels_up["score"]), "query-id"]))),
        "verdict_rows": int(len(crit)),
        **({"empty_documents": len(never)} if spec.corpus_group(source.name) is None else {}),
        **(candidate_counts(source.name, pool, qrels_up, qids, never)
           if spec.fixed_candidates else {}),
        **({} if tournament is None else {"tournament_rows": tournament.num_rows}),
        **{k: v for k, v in source.notes.items() if k != "empty_ids"},
    }
    log.info("subset %s: %d queries, %d pool pairs (%d injected), %d qrels rows", source.name,
             counts["queries"], counts["pool_pairs"], counts["gt_injected"], counts["qrels_rows"])
    return SubsetBuild(source.name, queries, qrels, top_ranked, excluded, pool, first_stage,
                       runs_out, crit, counts, tournament, bt)


def candidate_counts(subset: str, pool: pd.DataFrame, qrels: pd.DataFrame, qids: list[str],
                     never: set[str]) -> dict:
    """The counts of a subset whose pools are its fixed candidate lists: how many graded
    documents the lists leave out (``graded_outside_pool``) and how many per query
    (``graded_outside_pool_queries``, only queries leaving some out), each query's said once in
    the log."""
    outside = graded_outside(pool, qrels, qids, never)
    for qid, n in outside.items():
        log.warning("subset %s, query %s: the candidate list leaves out %d graded document(s)",
                    subset, qid, n)
    return {"graded_outside_pool": sum(outside.values()), "graded_outside_pool_queries": outside}


def write_corpus(corpus: CorpusReader, folder: Path, *, single_file: Path | None = None,
                 shard_rows: int = CORPUS_SHARD_ROWS, row_group_rows: int = 100_000) -> int:
    """Stream a corpus to parquet: one file, or shards ``corpus-0000i-of-0000n.parquet``.

    Batches are written as they come (never the whole corpus in memory). A schema carried by
    the reader (e.g. the ``datasets`` Image feature metadata) is kept.
    """
    if single_file is not None:
        return _write_stream(corpus, [single_file], None, row_group_rows)
    if not corpus.size:
        raise InputError("a sharded corpus needs its size up front (CorpusReader.size)")
    n_shards = max(1, -(-corpus.size // shard_rows))
    paths = [folder / shard_name(i, n_shards) for i in range(n_shards)]
    return _write_stream(corpus, paths, shard_rows, row_group_rows)


def _write_stream(corpus: CorpusReader, paths: list[Path], shard_rows: int | None,
                  row_group_rows: int) -> int:
    total = shard = in_shard = 0
    writer = None
    schema = corpus.schema
    keep_meta = schema is not None and schema.metadata and b"huggingface" in schema.metadata
    if schema is not None and not keep_meta:
        schema = schema.remove_metadata()
    bar = progress(total=corpus.size, unit="doc", desc=f"write {paths[0].parent.name}", leave=False)
    try:
        for batch in corpus.batches():
            if schema is None:
                schema = batch.schema.remove_metadata()
            batch = pa.RecordBatch.from_arrays(
                [batch.column(name).cast(schema.field(name).type) for name in schema.names],
                schema=schema)
            offset = 0
            while offset < batch.num_rows:
                if writer is None:
                    paths[shard].parent.mkdir(parents=True, exist_ok=True)
                    writer = pq.ParquetWriter(paths[shard], schema, compression="zstd")
                take = batch.num_rows - offset
                if shard_rows is not None:
                    take = min(take, shard_rows - in_shard)
                writer.write_batch(batch.slice(offset, take), row_group_size=row_group_rows)
                offset += take
                in_shard += take
                total += take
                if shard_rows is not None and in_shard >= shard_rows and shard + 1 < len(paths):
                    writer.close()
                    writer = None
                    shard += 1
                    in_shard = 0
            bar.update(batch.num_rows)
        if writer is None and total == 0:
            paths[0].parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({n: pa.array([], t) for n, t in zip(
                (schema or pa.schema([("id", pa.string())])).names,
                (schema or pa.schema([("id", pa.string())])).types, strict=True)},
                schema=schema), paths[0])
    finally:
        if writer is not None:
            writer.close()
        bar.close()
    if shard + 1 != len(paths) or (corpus.size is not None and total != corpus.size):
        raise InputError(f"the corpus stream gave {total:,} documents but the reader declared "
                         f"{corpus.size:,}", path=str(paths[0].parent))
    return total


def tool_versions() -> dict[str, str]:
    import importlib.metadata as md

    versions = {"python": platform.python_version(), "rcp-data": __version__}
    for pkg in ("numpy", "pandas", "pyarrow", "scipy", "ftfy", "bm25s", "ir_datasets",
                "datasets", "huggingface_hub"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            continue
    return versions


def built_from_generated_data(spec: SuiteSpec, source: SuiteSource, inputs: BuildInputs,
                              parameters: dict | None = None) -> bool:
    """Whether a build uses generated data: a synthetic suite, corpus (the source says
    ``"synthetic": true``), judge (``judge.json`` says so) or reranker run (runs.json's
    ``origin`` generated or simulated)."""
    return bool(spec.synthetic or source.facts.get("synthetic") is True
                or inputs.judge.synthetic or (parameters or {}).get("synthetic") is True
                or any(run.origin in ("generated", "simulated") for run, _ in inputs.runs))


def parts_provenance(inputs: BuildInputs, *, generated: bool = False) -> PartsProvenance:
    """How the judge and each reranker run of a build came about (judge.json, runs.json);
    ``generated``: the build says every part given to it was generated (the demo)."""
    judge = inputs.judge.kind
    if generated and judge == "real":
        judge = "generated"
    runs = tuple(RunOrigin(run.run_id, "generated" if generated and run.origin == "given"
                           else run.origin, run.computed_with)
                 for run, _ in inputs.runs if not run.is_judge)
    return PartsProvenance(judge=judge, rerankers=runs)


def build_release(spec: SuiteSpec, source: SuiteSource, inputs: BuildInputs, out: Path, *,
                  link: str = DEFAULT_LINK, parameters: dict | None = None,
                  partial: bool = False, force: bool = False,
                  finish: Callable[[Path], None] | None = None) -> BuildManifest:
    """Build the whole release directory ``out`` atomically; return the build manifest.

    With ``partial``, only the subsets the source provides are built (tests, trial builds);
    otherwise every subset of the suite must be there. ``out`` must be new or empty, or (with
    ``force``) a release folder built earlier, and apart from ``inputs.root``. ``finish`` is
    called with the finished temporary folder before it is moved into place (the CLI adds
    releases.json, the task file and the card there).
    """
    subsets = [s for s in spec.subset_names if s in source.subsets]
    missing = [s for s in spec.subset_names if s not in source.subsets]
    unknown = sorted(set(source.subsets) - set(spec.subset_names))
    if unknown:
        raise InputError(f"the source has subset(s) {unknown} that suite {spec.name!r} does not "
                         "declare")
    if missing and not partial:
        raise InputError(f"the source has no data for subset(s) {missing} of suite {spec.name!r}")
    where = {"--inputs": inputs.root}
    check_output_dir(out, RELEASE, inputs=where, force=force)
    validate_build(spec, source, inputs, subsets)
    gain(np.zeros(1), inputs.item_params, link)  # an unknown link fails here, before writing
    counts: dict[str, dict] = {}
    # the caller says every part it gives was generated (the demo: ``"synthetic": true``)
    everything_generated = (parameters or {}).get("synthetic") is True
    with output_dir(out, RELEASE, inputs=where, force=force) as tmp:
        # One provenance split at a time: its subsets are built, written and dropped before the
        # next (ViDoRe's runs are 30M rows). Corpora are written last, so that bad judge or run
        # input fails before the long corpus write.
        bar = progress(total=len(subsets), desc="subsets", unit="subset", leave=False)
        for split in spec.provenance_splits:
            members = [s for s in subsets if spec.provenance_split(s) == split]
            if not members:
                continue
            builds = []
            split_inputs = inputs.only_split(split)
            for name in members:
                builds.append(build_subset(spec, source.subsets[name], split_inputs, link))
                bar.update(1)
            for b in builds:
                _write_subset(tmp, b)
                counts[b.name] = b.counts
            _write_provenance(tmp, split, builds, inputs.item_params.n_criteria)
            del builds
        bar.close()
        written_groups: set[str] = set()
        for name in subsets:
            group = spec.corpus_group(name)
            corpus = source.subsets[name].corpus
            if group is None:
                write_corpus(corpus, tmp / name, single_file=tmp / subset_file(name, "corpus"))
            elif group not in written_groups:
                write_corpus(corpus, tmp / "corpus" / group, shard_rows=spec.corpus.shard_rows,
                             row_group_rows=spec.corpus.row_group_rows)
                written_groups.add(group)
        inputs.item_params.write(tmp / "provenance" / f"item_params.{inputs.judge.short}.json")
        write_spec_copy(spec, tmp)   # a suite outside the package: the spec travels along
        manifest = BuildManifest(
            suite=spec.name,
            synthetic=built_from_generated_data(spec, source, inputs, parameters),
            judge=JudgeRecord(model=inputs.judge.model, revision=inputs.judge.revision,
                              short=inputs.judge.short),
            calibration=CalibrationRecord(
                item_params=f"provenance/item_params.{inputs.judge.short}.json", link=link,
                reading_rules=dict(inputs.reading_rules or {})),
            inputs=tuple(
                FileEntry(str(p.relative_to(inputs.root)) if inputs.root else p.name,
                          p.stat().st_size, sha256_file(p))
                for p in inputs.files),
            sources=source.facts,
            tools=tool_versions(),
            parameters={
                "pool_rule": spec.pool.rule, "pool_size": spec.pool.size,
                "rrf_k": spec.pool.rrf_k, "retrievers": list(spec.pool.retrievers),
                "first_stage": [r.to_dict() for r in run_records(
                    spec, set(inputs.first_stage), inputs.computed_runs,
                    generated=everything_generated)],
                "provenance": parts_provenance(inputs,
                                               generated=everything_generated).to_dict(),
                **({"judging": judging_record(inputs.judging)} if inputs.judging else {}),
                **(parameters or {}),
            },
            subsets=tuple(subsets),
            counts=counts,
            corpus_files=corpus_record(tmp),
        ).with_content(tmp)  # every file written above, hashed (the last step)
        manifest.write(tmp)
        if finish is not None:
            finish(tmp)
    log.info("built %s release of %d subsets into %s", spec.name, len(subsets), out)
    return manifest


def _write_subset(tmp: Path, b: SubsetBuild) -> None:
    write_parquet(b.queries, tmp / subset_file(b.name, "queries"), _queries_schema(b.queries))
    write_parquet(b.qrels, tmp / subset_file(b.name, "qrels"), SCHEMAS["qrels"])
    write_gains(b.qrels, tmp, b.name)
    write_parquet(b.top_ranked, tmp / subset_file(b.name, "top_ranked"), SCHEMAS["top_ranked"])
    if b.excluded is not None:
        write_parquet(b.excluded, tmp / subset_file(b.name, "excluded"), SCHEMAS["excluded"])


def _queries_schema(queries: pd.DataFrame) -> pa.Schema:
    schema = SCHEMAS["queries"]
    if "instruction" in queries.columns:
        schema = schema.append(pa.field("instruction", pa.string()))
    return schema


def _write_provenance(tmp: Path, split: str, members: list[SubsetBuild], n_criteria: int) -> None:
    pool = pd.concat([b.pool for b in members], ignore_index=True)
    write_parquet(pool, tmp / provenance_file("pool", split), SCHEMAS["pool"])
    fs = pd.concat([b.first_stage for b in members], ignore_index=True)
    write_parquet(fs, tmp / provenance_file("first_stage", split), SCHEMAS["first_stage"])
    runs = pd.concat([b.runs for b in members], ignore_index=True)
    write_parquet(runs, tmp / provenance_file("runs", split), SCHEMAS["runs"])
    crit = pd.concat([b.criteria for b in members], ignore_index=True)
    write_parquet(crit, tmp / provenance_file("judge_criteria", split),
                  judge_criteria_schema(n_criteria))
    if any(b.tournament is not None for b in members):
        rows = pa.concat_tables([b.tournament for b in members if b.tournament is not None])
        write_parquet(rows, tmp / provenance_file("judge_tournament", split),
                      SCHEMAS["judge_tournament"])
    if any(b.bt is not None for b in members):
        bt = pd.concat([b.bt for b in members if b.bt is not None], ignore_index=True)
        write_parquet(bt, tmp / provenance_file("judge_bt", split), SCHEMAS["judge_bt"])


__all__ = ["SubsetBuild", "build_release", "build_subset", "candidate_counts", "computed_record",
           "parts_provenance", "run_records"]
