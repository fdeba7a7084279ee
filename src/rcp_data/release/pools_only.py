"""``build --until pools``: the pools of a suite not judged yet, for ``rcp-data judge``.

From the suite's sources and the first-stage runs of the builder inputs (``first_stage/``;
BM25 is computed when absent, as in a full build), the same fusion and pool rule as a full
build, written in the published layout a judge run reads: ``{subset}/queries.parquet``,
``{subset}/corpus.parquet`` and ``provenance/pool/{split}.parquet`` (every pool document,
excluded ones flagged), plus ``provenance/pools_only.json`` naming the suite (and, for a suite outside the package,
its spec: ``provenance/suite_spec.toml``). No judge output
is read and no gain is computed: the folder is not a release.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from rcp_data.building.build import first_stage_for, write_corpus
from rcp_data.building.pools import build_pools, rrf_fuse
from rcp_data.core.errors import UsageError
from rcp_data.core.io import write_json
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.layout import provenance_file, subset_file
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.suite import write_spec_copy
from rcp_data.model.tables import write_parquet
from rcp_data.runs.run_files import read_run_file

POOLS_ONLY = "provenance/pools_only.json"


def _first_stage(inputs: Path) -> dict[str, pd.DataFrame]:
    out = {}
    folder = Path(inputs) / "first_stage"
    for path in sorted(folder.glob("*")) if folder.exists() else []:
        if path.suffix in (".trec", ".parquet"):
            frame = read_run_file(path)
            frame.attrs["source"] = str(path)
            out[path.stem] = frame
    return out


def build_pools_only(spec: SuiteSpec, inputs: Path, out: Path, *, source=None,
                     source_options: dict | None = None,
                     inputs_of: dict[str, Path | None] | None = None) -> dict:
    """Write the pools-only folder ``out`` (new or empty, apart from ``inputs`` and the other
    inputs ``inputs_of`` names: flag -> path); return its counts. The reranker runs
    (``runs/``, judge strategies left out: they belong to another judge) and first-stage runs
    of ``inputs`` go with the pools, so that ``out``, once judged (``judge run --out``) and
    calibrated (``calibrate --inputs``), is the build's ``--inputs`` as it is."""
    from rcp_data.core.outputs import check_apart

    out = check_apart(out, {"--inputs": inputs, **(inputs_of or {})})
    if not out.is_symlink() and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} exists and is not an empty folder")
    if source is None:
        from rcp_data.sources.registry import read_suite

        source = read_suite(spec, source_options)
    runs_in = SimpleNamespace(first_stage=_first_stage(inputs), root=Path(inputs))
    pools: dict[str, list[pd.DataFrame]] = {}
    for sub in source.subsets.values():
        qids = sub.queries["id"].astype(str).tolist()
        qrels = sub.qrels.astype({"query-id": str, "corpus-id": str})
        excluded = {}
        if sub.excluded is not None and len(sub.excluded):
            excluded = {str(q): set(map(str, ids)) for q, ids in zip(
                sub.excluded["query-id"], sub.excluded["excluded-corpus-ids"], strict=True)}
        fused = rrf_fuse(first_stage_for(sub, runs_in, spec), spec.pool.retrievers,
                         k=spec.pool.rrf_k)
        pool = build_pools(fused, qrels[qrels["query-id"].isin(set(qids))], qids,
                           rule=spec.pool.rule, size=spec.pool.size,
                           grade_positive=spec.grade_positive,
                           excluded=excluded,
                           never_pool=set(sub.corpus.facts().empty_ids))
        pools.setdefault(spec.provenance_split(sub.name), []).append(pool)
    return write_pools_folder(spec, source, pools, out, carry=Path(inputs))


def write_pools_folder(spec: SuiteSpec, source, pools: dict[str, list[pd.DataFrame]],
                       out: Path, *, carry: Path | None = None) -> dict:
    """Write the pools (``{split: [pool frames]}``) of ``source`` as a folder a judge run
    reads into ``out``: moved in whole when ``out`` is new or empty, else beside what is
    there (the files of pools written earlier replaced); with ``carry``, that folder's ``first_stage/`` and reranker ``runs/``
    go along. Returns the counts."""
    out = Path(out)
    tmp = out.parent / f".{out.name}.tmp-pools"
    shutil.rmtree(tmp, ignore_errors=True)
    counts = {"queries": 0, "pool_documents": 0}
    try:
        for sub in source.subsets.values():
            queries = sub.queries.astype({"id": str}).reset_index(drop=True)
            cols = [c for c in ("id", "text", "instruction") if c in queries.columns]
            write_parquet(queries[cols], tmp / subset_file(sub.name, "queries"))
            if spec.corpus_group(sub.name) is None:
                write_corpus(sub.corpus, tmp / sub.name,
                             single_file=tmp / subset_file(sub.name, "corpus"))
            else:
                group = tmp / "corpus" / spec.corpus_group(sub.name)
                if not group.exists():
                    write_corpus(sub.corpus, group)
            counts["queries"] += len(queries)
        schema = SCHEMAS["pool"]
        for split, parts in pools.items():
            frame = pd.concat(parts, ignore_index=True).assign(judged=False)[schema.names]
            write_parquet(frame, tmp / provenance_file("pool", split), schema=schema)
            counts["pool_documents"] += len(frame)
        write_json({"suite": spec.name, "pools_only": True, **counts}, tmp / POOLS_ONLY)
        write_spec_copy(spec, tmp)   # a suite outside the package: the judge reads it here
        if carry is not None:
            _carry_runs(carry, tmp)
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_symlink():   # replaced, never written through
            out.unlink()
        if not out.exists() or not any(out.iterdir()):
            if out.exists():
                out.rmdir()
            os.replace(tmp, out)
            return counts
        for path in sorted(tmp.iterdir()):  # beside what is there: ours replaced
            target = out / path.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            elif os.path.lexists(target):
                target.unlink()
            os.replace(path, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return counts


def _carry_runs(inputs: Path, tmp: Path) -> None:
    """Copy ``inputs``' first-stage runs and reranker runs (not judge strategies) to ``tmp``."""
    from rcp_data.building.contract import FIRST_STAGE_DIR, RUNS_DIR, RUNS_JSON, read_runs_json

    folder = inputs / FIRST_STAGE_DIR
    if folder.is_dir():
        shutil.copytree(folder, tmp / FIRST_STAGE_DIR)
    runs_json = inputs / RUNS_DIR / RUNS_JSON
    if not runs_json.is_file():
        return
    raw = json.loads(runs_json.read_text(encoding="utf-8"))
    kept = [entry for entry, run in zip(raw, read_runs_json(runs_json), strict=True)
            if not run.is_judge]
    (tmp / RUNS_DIR).mkdir(parents=True)
    for entry in kept:
        shutil.copyfile(inputs / RUNS_DIR / entry["file"], tmp / RUNS_DIR / entry["file"])
    write_json(kept, tmp / RUNS_DIR / RUNS_JSON)
