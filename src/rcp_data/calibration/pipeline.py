"""One calibration run: verdicts and Stage A (its scores, or the raw tournament answers) in;
item parameters, thetas, diagnostics out."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from rcp_data.calibration.diagnostics import fit_diagnostics
from rcp_data.calibration.fit import MapSettings, fit_map, read_thetas
from rcp_data.calibration.reading import DEFAULT_RULE
from rcp_data.calibration.rubric import RubricSettings, fit_rubric
from rcp_data.calibration.verdicts import VerdictCounts, count_verdicts, read_verdicts
from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import write_json
from rcp_data.core.outputs import CALIBRATION, Inputs, output_dir
from rcp_data.model.tables import write_parquet

log = logging.getLogger(__name__)

ITEM_PARAMS_FILE = "item_params.json"
THETAS_FILE = "thetas.parquet"
QUERIES_FILE = "queries.parquet"
STAGE_A_QUERIES_FILE = "stage_a_queries.parquet"
DIAGNOSTICS_FILE = "diagnostics.json"

THETA_SCHEMA = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()),
                          ("theta", pa.float64()), ("theta_bt", pa.float64())])
RUBRIC_THETA_SCHEMA = pa.schema([*THETA_SCHEMA, ("theta_sd", pa.float64())])
QUERY_SCHEMA = pa.schema([("query-id", pa.string()), ("tau", pa.float64()),
                          ("alpha", pa.float64()), ("n_docs", pa.int64()),
                          ("n_responses", pa.int64())])


@dataclass
class Calibration:
    """The outputs of one run, ready to write."""

    method: str  # "2pl-map-bt" | "2pl-mml-rubric"
    params: ItemParams
    thetas: pd.DataFrame
    queries: pd.DataFrame | None
    diagnostics: dict
    notes: list[str] = field(default_factory=list)
    stage_a_queries: pd.DataFrame | None = None  # per-query Stage A diagnostics (a tournament)

    @property
    def reading_rules(self) -> dict:
        """The rules the answers were read with: ``{"stage_a": ..., "stage_b": ...}``."""
        return dict(self.diagnostics.get("reading_rules", {}))


def calibrate(counts: VerdictCounts, thetas: pd.DataFrame | None, *, rubric_only: bool = False,
              device: str = "cpu", progress: bool = True,
              map_settings: MapSettings | None = None,
              rubric_settings: RubricSettings | None = None,
              thetas_source: str = "<thetas>") -> Calibration:
    """Fit the 2PL (MAP with BT scores, or rubric-only MML) and run the diagnostics."""
    base = {
        "reading_rule": counts.stats.to_dict(),
        "reading_rules": {"stage_b": counts.stats.rule},
        "n_documents": counts.n_docs,
        "n_responses": counts.n_responses,
        "n_queries_with_verdicts": int(len(pd.unique(counts.query_id))),
    }
    if rubric_only:
        fit = fit_rubric(counts, settings=rubric_settings)
        table = fit.thetas
        if thetas is not None:
            table = table.drop(columns="theta_bt").merge(
                thetas[["query-id", "corpus-id", "theta_bt"]], how="left",
                on=["query-id", "corpus-id"])
        diag = fit_diagnostics(fit.params, fit.doc_theta, counts.n, counts.passes)
        info = fit.info
        diag.update(base, method="2pl-mml-rubric", fit={
            "iterations": info.iterations, "converged": info.converged,
            "objective": info.objective, "seconds": info.seconds,
            "count_patterns": info.n_patterns,
            "ability_grid": {"step": info.grid_step, "points": info.grid_points,
                             "rounds": info.grid_rounds,
                             "rule": "trapezoid, step <= 0.5 / max raw gamma"},
            "raw_scale": {"gamma": info.gamma_raw.tolist(), "beta": info.beta_raw.tolist(),
                          "scale": info.scale, "shift": info.shift},
        }, notes=fit.notes)
        return Calibration("2pl-mml-rubric", fit.params, table, None, diag, fit.notes)
    if thetas is None:
        raise UsageError("the MAP fit needs Stage A: its scores (--thetas) or the tournament "
                         "answers (--tournament); use --rubric-only for verdicts without them")
    fit = fit_map(counts, thetas, settings=map_settings, device=device, progress=progress,
                  source=thetas_source)
    has = fit.queries["n_responses"].to_numpy() > 0
    diag = fit_diagnostics(fit.params, fit.doc_theta, counts.n, counts.passes,
                           tau=fit.queries["tau"].to_numpy()[has],
                           alpha=fit.queries["alpha"].to_numpy()[has])
    info = fit.info
    diag.update(base, method="2pl-map-bt", n_queries=len(fit.queries), fit={
        "iterations": info.iterations, "evaluations": info.evaluations,
        "converged": info.converged, "objective": info.objective, "seconds": info.seconds,
        "device": info.device,
    }, notes=fit.notes)
    return Calibration("2pl-map-bt", fit.params, fit.thetas, fit.queries, diag, fit.notes)


def item_params_dict(cal: Calibration) -> dict:
    d = cal.params.to_dict()
    d.update(criteria=cal.params.criteria, method=cal.method,
             convention="sum(gamma) = C, mean(beta) = 0",
             n_documents=cal.diagnostics["n_documents"],
             n_responses=cal.diagnostics["n_responses"],
             reading_rules=cal.reading_rules)
    return d


def fitted_item_params(cal: Calibration, **extra) -> ItemParams:
    """The fit's item parameters with what ``item_params.json`` records beside them (method,
    counts, reading rules and what they left out) and ``extra``."""
    d = item_params_dict(cal)
    reading = {"stage_b": cal.diagnostics.get("reading_rule")}
    if "stage_a" in cal.diagnostics:
        reading["stage_a"] = cal.diagnostics["stage_a"]["reading"]
    d["reading"] = reading
    d.update(extra)
    return ItemParams.from_dict(_jsonable(d))


def write_calibration(cal: Calibration, out: str | Path, *, inputs: Inputs | None = None,
                      force: bool = False) -> Path:
    """Write item_params.json, thetas.parquet (+ queries.parquet), diagnostics.json atomically.

    ``out`` must be new or empty, or a calibration folder written earlier and ``force`` given,
    and apart from ``inputs`` (:func:`rcp_data.core.outputs.output_dir`).
    """
    out = Path(out)
    with output_dir(out, CALIBRATION, inputs=inputs, force=force) as tmp:
        write_json(fitted_item_params(cal).to_dict(), tmp / ITEM_PARAMS_FILE)
        schema = RUBRIC_THETA_SCHEMA if "theta_sd" in cal.thetas.columns else THETA_SCHEMA
        write_parquet(cal.thetas[schema.names], tmp / THETAS_FILE, schema)
        if cal.queries is not None:
            write_parquet(cal.queries[QUERY_SCHEMA.names], tmp / QUERIES_FILE, QUERY_SCHEMA)
        if cal.stage_a_queries is not None:
            write_parquet(cal.stage_a_queries, tmp / STAGE_A_QUERIES_FILE)
        write_json({"schema": CALIBRATION.schema, **_jsonable(cal.diagnostics)},
                   tmp / DIAGNOSTICS_FILE)
        if CALIBRATION.foreign_files(tmp):  # --force replaces only the files named there
            raise RuntimeError(f"a calibration writes {CALIBRATION.foreign_files(tmp)}, which "
                               "core.outputs.CALIBRATION.files does not name")
    log.info("wrote %s: item parameters, %s thetas%s, diagnostics", out,
             f"{len(cal.thetas):,}",
             "" if cal.queries is None else f", {len(cal.queries):,} queries")
    return out


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def stage_a_thetas(tournament: str | Path, *, rule: str = DEFAULT_RULE, device: str = "cpu"):
    """Read the tournament table and fit Stage A (:class:`~.bt.StageAFit`)."""
    from rcp_data.calibration.bt import fit_stage_a
    from rcp_data.calibration.tournament import load_tournament, read_tournament

    t = load_tournament(read_tournament(tournament, for_fit=True), source=str(tournament))
    pa.default_memory_pool().release_unused()  # the table is encoded: give its memory back
    return fit_stage_a(t, rule=rule, device=device)


def calibrate_files(criteria: str | Path, thetas: str | Path | None, out: str | Path, *,
                    rubric_only: bool = False, device: str = "cpu",
                    progress: bool = True, force: bool = False,
                    tournament: str | Path | None = None,
                    rule: str = DEFAULT_RULE) -> Calibration:
    """Read the verdict table and Stage A (the theta table, or the tournament table refitted
    under reading rule ``rule``), fit, write ``out``; returns the calibration."""
    if thetas is not None and tournament is not None:
        raise UsageError("give the Stage A scores (--thetas) or the tournament answers "
                         "(--tournament), not both")
    inputs = {"--criteria": criteria, "--thetas": thetas, "--tournament": tournament}
    counts = count_verdicts(read_verdicts(criteria), source=str(criteria))
    table = read_thetas(thetas) if thetas is not None else None
    stage_a = None
    if tournament is not None:
        stage_a = stage_a_thetas(tournament, rule=rule, device=device)
        table = stage_a.thetas.drop(columns="split", errors="ignore")
        thetas = tournament
    try:
        cal = calibrate(counts, table, rubric_only=rubric_only, device=device,
                        progress=progress, thetas_source=str(thetas))
    except InputError as exc:
        if exc.path is not None:
            raise
        raise InputError(exc.message, path=str(criteria)) from exc
    if stage_a is not None:
        attach_stage_a(cal, stage_a)
    write_calibration(cal, out, inputs=inputs, force=force)
    return cal


def attach_stage_a(cal: Calibration, stage_a) -> None:
    """Record a Stage A fit in a calibration: its rule, summary and per-query table."""
    cal.diagnostics["stage_a"] = stage_a.summary
    cal.diagnostics.setdefault("reading_rules", {})["stage_a"] = stage_a.stats.rule
    cal.stage_a_queries = stage_a.queries
