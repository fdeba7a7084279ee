"""Recalibration releases: release N+1 from a refit of the same judge's answers.

Data, pools, runs, verdicts and Stage A answers are unchanged; ``theta`` (when the refit gives
new thetas) and ``gain`` of every judged pair change, so do ``theta_bt`` (``provenance-judge-bt``)
when the refit re-read the Stage A answers, the item parameters are replaced, the history gains
a release (recording the reading rules) and marks the previous one superseded.
:func:`refit_from_release` re-reads a release's own answers under another rule (the one command
from raw answers to release N+1); :func:`diff_releases` reports how far the gains and the
printed table cells moved, and puts the old and new release's agreement with the human labels
side by side (:mod:`.agreement_gate`: a release that agrees less says so).
"""

from __future__ import annotations

import datetime as _dt
import logging
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError
from rcp_data.core.gains import GAIN_TOLERANCE, ItemParams, gain
from rcp_data.core.hub_client import HubClient
from rcp_data.core.outputs import Inputs, output_dir
from rcp_data.core.specs import SHOWN_TIE_RULES, SuiteSpec, check_no_todo
from rcp_data.model.card_format import CARD_METRICS
from rcp_data.model.layout import (
    CARD_FILE,
    RELEASE,
    RELEASES_JSON,
    TASK_FILE,
    provenance_file,
    subset_file,
)
from rcp_data.model.manifest import load_manifest
from rcp_data.model.release import Release, open_release, release_is_synthetic
from rcp_data.model.schemas import SCHEMAS
from rcp_data.model.tables import write_gains, write_parquet
from rcp_data.release.agreement_gate import AgreementGate, agreement_gate

log = logging.getLogger(__name__)


def recalibrate_release(prev: Path, out: Path, spec: SuiteSpec, params: ItemParams, *,
                        thetas: pd.DataFrame | None = None, summary: str = "",
                        date: str | None = None, previous_revision: str | None = None,
                        link: str | None = None, force: bool = False,
                        inputs: Inputs | None = None, reading_rules: dict | None = None) -> dict:
    """Write release N+1 into ``out`` from release N in ``prev``; return the new history entry.

    ``thetas`` (``query-id, corpus-id, theta``; optional ``split`` and ``theta_bt``) replaces the
    judged pairs' thetas (and the Stage A scores of ``provenance-judge-bt``); every judged pair
    of the release must get one. ``reading_rules`` (``{"stage_a": ..., "stage_b": ...}``) are
    recorded in the new release's calibration. The card and the task file are rendered for
    release N+1 from its data, so ``out`` is publishable as it stands. ``out`` must be new or
    empty, or a release folder written earlier and ``force`` given, and apart from ``prev`` and
    ``inputs`` (:func:`rcp_data.core.outputs.output_dir`).
    """
    from rcp_data.model.history import add_release, read_history, synthetic_summary, write_history
    from rcp_data.release.prepare import render_release_files

    history = read_history(Path(prev) / RELEASES_JSON)
    current = history.current
    if current is None:
        raise InputError("the release history has no current release to recalibrate",
                         path=str(Path(prev) / RELEASES_JSON))
    _check_no_todo(Path(prev), spec)
    link = link or current.link
    rel = open_release(Path(prev), suite=spec)
    where = {"RELEASE_DIR": prev, **(inputs or {})}
    with output_dir(Path(out), RELEASE, inputs=where, force=force) as tmp:
        shutil.copytree(prev, tmp, dirs_exist_ok=True)
        for stale in (CARD_FILE, TASK_FILE):
            (tmp / stale).unlink(missing_ok=True)
        for subset in spec.subset_names:
            if not rel.has(subset, "qrels"):
                continue
            qrels = rel.table(subset, "qrels")
            judged = qrels["theta"].notna().to_numpy()
            theta = qrels["theta"].to_numpy(dtype=np.float64)
            if thetas is not None:
                mine = thetas
                if "split" in thetas.columns:
                    mine = thetas[thetas["split"] == spec.provenance_split(subset)]
                merged = qrels[["query-id", "corpus-id"]].merge(
                    mine[["query-id", "corpus-id", "theta"]], how="left",
                    on=["query-id", "corpus-id"])
                new = merged["theta"].to_numpy(dtype=np.float64)
                lacking = judged & np.isnan(new)
                if lacking.any():
                    r = qrels[lacking].iloc[0]
                    raise InputError(f"the refit gives no theta for {int(lacking.sum())} judged "
                                     f"pair(s) of subset {subset}, e.g. query {r['query-id']!r}, "
                                     f"document {r['corpus-id']!r}", field="theta")
                theta = np.where(judged, new, np.nan)
            qrels["theta"] = theta
            qrels["gain"] = np.where(judged, gain(np.where(judged, theta, 0.0), params, link), 0.0)
            write_parquet(qrels, tmp / subset_file(subset, "qrels"), SCHEMAS["qrels"])
            write_gains(qrels, tmp, subset)
        if thetas is not None and "theta_bt" in thetas.columns:
            _write_theta_bt(tmp, rel, spec, thetas)
        params.write(tmp / current.item_params)
        calibration = dict(current.calibration)
        if reading_rules:
            calibration["reading_rules"] = dict(reading_rules)
        synthetic = current.synthetic or release_is_synthetic(tmp, synthetic_suite=spec.synthetic)
        new_history = add_release(
            history, judge=current.judge, calibration=calibration,
            summary=synthetic_summary(summary or "Recalibration of the same judge's answers.",
                                      synthetic),
            date=date, previous_revision=previous_revision,
            extra={"synthetic": True} if synthetic else None)
        write_history(new_history, tmp / RELEASES_JSON)
        manifest = load_manifest(tmp)
        if manifest is not None:
            recalibration = {"from_release": current.release, "link": link,
                             "item_params": params.to_dict()}
            calibration = manifest.calibration
            if reading_rules:
                recalibration["reading_rules"] = dict(reading_rules)
                calibration = replace(calibration, reading_rules=dict(reading_rules))
            manifest = replace(manifest, recalibration=recalibration, calibration=calibration)
            # new qrels and item parameters: the content list anew
            manifest.with_content(tmp).write(tmp)
            # the pictures and Diagnostics of the new labels (release N's are stale)
            from rcp_data.release.cut import write_release_diagnostics

            write_release_diagnostics(tmp, spec)
        render_release_files(tmp, spec, new_history)
    log.info("wrote recalibration release %d of %s into %s", new_history.releases[-1].release,
             spec.name, out)
    return new_history.releases[-1].to_dict()


def _write_theta_bt(tmp: Path, rel: Release, spec: SuiteSpec, thetas: pd.DataFrame) -> None:
    """``provenance-judge-bt`` of every provenance split from the refit's ``theta_bt``."""
    from rcp_data.building.judge import bt_rows

    for split in spec.provenance_splits:
        if not rel.has_provenance("pool", split):
            continue
        mine = thetas
        if "split" in thetas.columns:
            mine = thetas[thetas["split"] == split]
        pool = rel.provenance("pool", split, columns=["query-id", "corpus-id"])
        bt = bt_rows(mine, pool)
        if bt is not None and len(bt):
            write_parquet(bt, tmp / provenance_file("judge_bt", split), SCHEMAS["judge_bt"])


def refit_from_release(release: Path, spec: SuiteSpec, *, stage_a_rule: str | None = None,
                       tournament: Path | None = None, criteria: Path | None = None,
                       device: str = "cpu"):
    """Refit Stage A (under ``stage_a_rule``, default the recorded rule) and the 2PL from the
    answers release ``release`` ships, or from the raw tables given instead; returns the
    calibration (thetas with ``split``)."""
    from rcp_data.calibration.refit import (
        read_release_answers,
        refit_release,
        with_raw_answers,
    )

    answers = read_release_answers(release, spec)
    if tournament is not None or criteria is not None:
        answers = with_raw_answers(answers, spec, tournament=tournament, criteria=criteria)
    cal, _ = refit_release(answers, stage_a_rule=stage_a_rule, device=device)
    return cal


@dataclass
class ReleaseDiff:
    """How far release B moved from release A."""

    judged_pairs: int = 0
    gains_changed: int = 0
    gain_max_abs: float = 0.0
    gain_mean_abs: float = 0.0
    cells: int = 0
    cells_moved: int = 0
    cell_max_points: float = 0.0
    moved: list = field(default_factory=list)
    gate: AgreementGate | None = None       # old and new agreement with the human labels

    @property
    def agrees_less(self) -> bool:
        return self.gate is not None and self.gate.agrees_less

    def to_dict(self) -> dict:
        out = asdict(replace(self, gate=None))
        out.pop("gate")
        out["agreement"] = self.gate.to_dict() if self.gate is not None else None
        out["agrees_less"] = self.agrees_less
        return out

    def text(self) -> str:
        out = (f"gains: {self.gains_changed} of {self.judged_pairs} judged pairs changed "
               f"(max |diff| {self.gain_max_abs:.4g}, mean {self.gain_mean_abs:.4g}); "
               f"printed cells: {self.cells_moved} of {self.cells} moved "
               f"(max {self.cell_max_points:.1f} points)")
        return out + ("\n" + self.gate.text() if self.gate is not None else "")


def diff_releases(a: Path, b: Path, spec: SuiteSpec, *, k: int | None = None) -> ReleaseDiff:
    """Gains and printed table cells of ``b`` against ``a``: the cells the card prints (its
    tie rules and views, % with one decimal) at ``k`` (default: the card's main k)."""
    from rcp_data.scoring.replay import load_release, replay_loaded

    k = spec.main_k if k is None else k

    diff = ReleaseDiff()
    deltas = []
    ra, rb = open_release(Path(a), suite=spec), open_release(Path(b), suite=spec)
    for subset in spec.subset_names:
        if not ra.has(subset, "qrels"):
            continue
        qa, qb = ra.table(subset, "qrels"), rb.table(subset, "qrels")
        m = qa.merge(qb, on=["query-id", "corpus-id"], suffixes=("_a", "_b"))
        judged = m["theta_a"].notna() | m["theta_b"].notna()
        d = (m.loc[judged, "gain_b"].fillna(0) - m.loc[judged, "gain_a"].fillna(0)).abs()
        deltas.append(d.to_numpy())
    all_d = np.concatenate(deltas) if deltas else np.zeros(0)
    diff.judged_pairs = int(all_d.size)
    diff.gains_changed = int((all_d > GAIN_TOLERANCE).sum())
    diff.gain_max_abs = float(all_d.max()) if all_d.size else 0.0
    diff.gain_mean_abs = float(all_d.mean()) if all_d.size else 0.0
    da, db = load_release(a, spec, baselines=False), load_release(b, spec, baselines=False)
    for rule in SHOWN_TIE_RULES:
        for view in spec.card_views:
            ta = replay_loaded(da, k=k, tie_rule=rule, view=view).tables
            tb = replay_loaded(db, k=k, tie_rule=rule, view=view).tables
            for metric in CARD_METRICS:
                pa_ = (100 * ta[metric]).round(1)
                pb_ = (100 * tb[metric]).round(1)
                for model in pa_.index:
                    for col in pa_.columns:
                        x, y = pa_.at[model, col], pb_.at[model, col]
                        diff.cells += 1
                        if x != y:
                            diff.cells_moved += 1
                            diff.cell_max_points = max(diff.cell_max_points, abs(y - x))
                            diff.moved.append({"metric": metric, "tie_rule": rule, "view": view,
                                               "model": model, "column": col,
                                               "before": float(x), "after": float(y)})
    diff.gate = agreement_gate(Path(a), Path(b), spec)
    if diff.gate.agrees_less:
        log.warning("%s", diff.gate.warning())
    return diff


@dataclass(frozen=True)
class Recalibration:
    """What :func:`recalibrate` wrote: release N+1's history entry, the refit's item
    parameters and how far the gains and printed cells moved."""

    entry: dict
    params: ItemParams
    diff: ReleaseDiff

    def to_dict(self) -> dict:
        """The JSON object of ``rcp-data recalibrate --json``."""
        return {"release": self.entry, "diff": self.diff.to_dict()}


def read_fit(fit: Path) -> tuple[ItemParams, pd.DataFrame]:
    """The item parameters and thetas of a ``rcp-data calibrate`` output folder."""
    from rcp_data.building.input_checks import check_thetas
    from rcp_data.calibration.pipeline import ITEM_PARAMS_FILE, THETAS_FILE
    from rcp_data.core.io import read_parquet

    params = ItemParams.read(Path(fit) / ITEM_PARAMS_FILE)
    thetas_path = Path(fit) / THETAS_FILE
    thetas = read_parquet(thetas_path, required=("query-id", "corpus-id", "theta"),
                          what="the refit's thetas").to_pandas()
    check_thetas(thetas, str(thetas_path))
    return params, thetas


def _check_no_todo(release: Path, spec: SuiteSpec) -> None:
    """The new release's card and task file are written from ``spec``: refused with TODO
    markers before anything is written, as build refuses them (the repo of the release's
    history fills ``suite.repo``)."""
    from rcp_data.model.history import read_history

    path = Path(release) / RELEASES_JSON
    repo = read_history(path).repo if path.is_file() else ""
    check_no_todo(spec, given=("suite.repo",) if repo else ())


def recalibrate(release: Release | str | Path, out: Path, *, spec: SuiteSpec | None = None,
                fit: Path | None = None, rule: str | None = None,
                tournament: Path | None = None, criteria: Path | None = None,
                device: str = "cpu", summary: str = "", date: str | None = None,
                previous_revision: str | None = None, force: bool = False,
                client: HubClient | None = None) -> Recalibration:
    """Release N+1 of ``release`` into ``out``, from a calibrate output folder (``fit``) or a
    refit run here from the raw answers (``rule``, ``tournament``, ``criteria``: the release's
    own answers by default; with neither, the rule release N recorded), with the diff against
    release N; ``date`` defaults to today. ``release``: an opened release,
    a release directory or ``hf://datasets/OWNER/NAME@REV`` (:func:`open_release`; a Hub
    revision's commit sha is the previous release's revision when its history lacks it).
    ``spec``: the release's suite (default: the one the release names). ``out`` is checked
    before the refit runs."""
    from rcp_data.core.errors import UsageError
    from rcp_data.core.outputs import check_output_dir
    from rcp_data.model.layout import RELEASE
    from rcp_data.model.release import open_release

    opened = open_release(release, suite=spec, client=client)
    release, spec, out = opened.root, opened.spec, Path(out)
    previous_revision = previous_revision or opened.revision
    raw = rule is not None or tournament is not None or criteria is not None
    if fit is not None and raw:
        raise UsageError("give a calibrate output (--fit) or refit from the raw answers "
                         "(--rule, --tournament, --criteria), not both")
    # neither: refit from the release's own answers under the rule it recorded
    date = date or _dt.date.today().isoformat()
    inputs = {"RELEASE_DIR": release, "--fit": fit, "--tournament": tournament,
              "--criteria": criteria}
    check_output_dir(out, RELEASE, inputs=inputs, force=force)
    _check_no_todo(release, spec)   # before the refit, as the output folder is
    if fit is not None:
        params, thetas = read_fit(fit)
    else:
        from rcp_data.calibration.pipeline import fitted_item_params

        cal = refit_from_release(release, spec, stage_a_rule=rule, tournament=tournament,
                                 criteria=criteria, device=device)
        params, thetas = fitted_item_params(cal), cal.thetas
    rules = params.extra.get("reading_rules")
    entry = recalibrate_release(release, out, spec, params, thetas=thetas, summary=summary,
                                date=date, previous_revision=previous_revision, force=force,
                                inputs={k: v for k, v in inputs.items()
                                        if k != "RELEASE_DIR" and v is not None},
                                reading_rules=rules if isinstance(rules, dict) else None)
    return Recalibration(entry=entry, params=params, diff=diff_releases(release, out, spec))
