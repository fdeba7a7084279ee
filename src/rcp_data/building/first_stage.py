"""The first stage before judging: the runs a build computes (BM25, ``[pool] dense``) and the
pools a judge is shown, written in the builder-input layout (``rcp-data suite first-stage``).

The judge must see the pools the build will make, so both come from the same functions: the
runs of :func:`rcp_data.building.build.computed_run`, fused by :func:`rcp_data.building.pools.rrf_fuse`
in ``[pool] retrievers`` order and pooled by :func:`rcp_data.building.pools.build_pools`. Written
to ``OUT/first_stage/<retriever>.parquet`` (``query-id, corpus-id, score, rank, split``; the
build reads them as given runs and computes nothing again) and ``OUT/pools.parquet`` (``split,
query-id, corpus-id, pool_rank, rrf_score, gt_injected, excluded``), with
``OUT/first_stage/first_stage.json`` recording that rcp-data computed each run (method, model,
the file's sha256), which the build's manifest carries on (:func:`rcp_data.building.build.run_records`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rcp_data.building.build import computed_record, computed_run
from rcp_data.building.contract import FIRST_STAGE_DIR, FIRST_STAGE_JSON, write_computed_runs
from rcp_data.building.input_checks import COMPUTED_RETRIEVERS, validate_source
from rcp_data.building.pools import build_pools, rrf_fuse
from rcp_data.core.errors import InputError
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.manifest import FirstStageRecord
from rcp_data.model.tables import write_parquet
from rcp_data.sources.base import SuiteSource

log = logging.getLogger(__name__)

POOLS_FILE = "pools.parquet"


@dataclass(frozen=True)
class FirstStage:
    """What :func:`first_stage` computed: the runs per retriever and the pools (with
    ``split``)."""

    runs: dict[str, pd.DataFrame]
    pools: pd.DataFrame
    records: tuple[FirstStageRecord, ...] = ()

    def write(self, out: Path) -> list[Path]:
        """Write the runs and pools into ``out`` (each file atomically; a symbolic link at a
        written folder or file is replaced, never written through); return the paths."""
        from rcp_data.core.outputs import own_path

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {}
        for retriever, frame in self.runs.items():
            path = own_path(out, f"{FIRST_STAGE_DIR}/{retriever}.parquet")
            write_parquet(frame, path)
            paths[retriever] = path
        record = own_path(out, f"{FIRST_STAGE_DIR}/{FIRST_STAGE_JSON}")
        write_computed_runs(list(self.records), paths, record)
        pools = own_path(out, POOLS_FILE)
        write_parquet(self.pools, pools)
        return [*paths.values(), record, pools]


def first_stage(spec: SuiteSpec, source: SuiteSource) -> FirstStage:
    """Compute every fused retriever's run and the pools of every subset of ``source``."""
    if spec.fixed_candidates:
        raise InputError(f"suite {spec.name!r} has no first stage to compute: its pools are its "
                         f"candidate lists ([pool] rule = \"candidates\"); put them in the "
                         f"builder inputs as first_stage/{spec.pool.retrievers[0]}.trec and run "
                         "`rcp-data build --until pools` for the judge", path=spec.path,
                         field="pool.rule")
    lacking = [r for r in spec.pool.retrievers
               if r not in COMPUTED_RETRIEVERS and r not in spec.pool.dense]
    if lacking:
        raise InputError(f"cannot compute the first-stage run of {', '.join(lacking)} (only "
                         "bm25 and the [pool] dense retrievers are computed)", path=spec.path,
                         field="pool.retrievers")
    subsets = [s for s in spec.subset_names if s in source.subsets]
    validate_source(spec, source, subsets)
    runs: dict[str, list[pd.DataFrame]] = {r: [] for r in spec.pool.retrievers}
    pools = []
    for name in subsets:
        sub = source.subsets[name]
        split = spec.provenance_split(name)
        parts = [computed_run(spec, sub, r) for r in spec.pool.retrievers]
        for r, run in zip(spec.pool.retrievers, parts, strict=True):
            runs[r].append(run[["query-id", "corpus-id", "score", "rank"]].assign(split=split))
        fused = rrf_fuse(pd.concat(parts, ignore_index=True), spec.pool.retrievers,
                         k=spec.pool.rrf_k)
        excluded = {}
        if sub.excluded is not None:
            excluded = {str(q): set(map(str, ids)) for q, ids in zip(
                sub.excluded["query-id"], sub.excluded["excluded-corpus-ids"], strict=True)}
        qids = sub.queries["id"].astype(str).tolist()
        pool = build_pools(fused, sub.qrels.astype({"query-id": str, "corpus-id": str}), qids,
                           rule=spec.pool.rule, size=spec.pool.size,
                           grade_positive=spec.grade_positive, excluded=excluded,
                           never_pool=set(sub.corpus.facts().empty_ids))
        pools.append(pool.drop(columns=["judged"], errors="ignore").assign(split=split))
        log.info("first stage of %s: %d queries, %d pool pairs", name, len(qids), len(pool))
    return FirstStage({r: pd.concat(parts, ignore_index=True) for r, parts in runs.items()},
                      pd.concat(pools, ignore_index=True),
                      tuple(computed_record(spec, r) for r in spec.pool.retrievers))


__all__ = ["POOLS_FILE", "FirstStage", "first_stage"]
