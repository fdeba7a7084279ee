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
    inputs ``inputs_of`` names: flag -> path); return its counts."""
    from rcp_data.core.outputs import check_apart

    out = check_apart(out, {"--inputs": inputs, **(inputs_of or {})})
    if not out.is_symlink() and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--out {out} exists and is not an empty folder")
    if source is None:
        from rcp_data.sources.registry import read_suite

        source = read_suite(spec, source_options)
    runs_in = SimpleNamespace(first_stage=_first_stage(inputs), root=Path(inputs))
    tmp = out.parent / f".{out.name}.tmp-pools"
    shutil.rmtree(tmp, ignore_errors=True)
    pools: dict[str, list[pd.DataFrame]] = {}
    counts = {"queries": 0, "pool_documents": 0}
    try:
        for sub in source.subsets.values():
            queries = sub.queries.astype({"id": str}).reset_index(drop=True)
            qids = queries["id"].tolist()
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
            pool["judged"] = False
            pools.setdefault(spec.provenance_split(sub.name), []).append(pool)
            cols = [c for c in ("id", "text", "instruction") if c in queries.columns]
            write_parquet(queries[cols], tmp / subset_file(sub.name, "queries"))
            if spec.corpus_group(sub.name) is None:
                write_corpus(sub.corpus, tmp / sub.name,
                             single_file=tmp / subset_file(sub.name, "corpus"))
            else:
                group = tmp / "corpus" / spec.corpus_group(sub.name)
                if not group.exists():
                    write_corpus(sub.corpus, group)
            counts["queries"] += len(qids)
            counts["pool_documents"] += len(pool)
        schema = SCHEMAS["pool"]
        for split, parts in pools.items():
            frame = pd.concat(parts, ignore_index=True)[schema.names]
            write_parquet(frame, tmp / provenance_file("pool", split), schema=schema)
        write_json({"suite": spec.name, "pools_only": True, **counts}, tmp / POOLS_ONLY)
        write_spec_copy(spec, tmp)   # a suite outside the package: the judge reads it here
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_symlink():   # replaced, never written through
            out.unlink()
        elif out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return counts
