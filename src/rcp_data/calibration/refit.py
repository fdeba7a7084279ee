"""Refitting a release from what it ships: Stage A answers, Stage B verdicts, theta_bt.

A release built by this project carries ``provenance/judge_tournament/{split}.parquet`` (the
raw Stage A answers), ``provenance/judge_bt/{split}.parquet`` (the Bradley-Terry scores) and
``provenance/judge_criteria/{split}.parquet`` (the verdicts), and records the reading rules in
its releases.json and build manifest. :func:`read_release_answers` reads them;
:func:`refit_release` re-runs Stage A (under the recorded rule, or another) and the 2PL MAP.

Queries are told apart by ``(split, query-id)``: ids may repeat across provenance splits
(e.g. ViDoRe's domains), so the fits see ``split + "\\x1f" + query-id``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from rcp_data.calibration.reading import DEFAULT_RULE
from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.layout import BUILD_MANIFEST, RELEASES_JSON, provenance_file

log = logging.getLogger(__name__)

SEP = "\x1f"


@dataclass(frozen=True)
class ReleaseAnswers:
    """What a release ships for a refit (query ids prefixed with their split and SEP)."""

    criteria: pa.Table | None
    tournament: pa.Table | None  # with a ``split`` column
    theta_bt: pd.DataFrame | None  # published: split, query-id, corpus-id, theta_bt
    item_params: ItemParams | None
    item_params_path: str
    rules: dict  # {"stage_a": ..., "stage_b": ...} as recorded (may be empty)


def _calibration(root: Path) -> dict:
    """The current release's calibration record (releases.json, else the build manifest)."""
    for rel in (RELEASES_JSON, BUILD_MANIFEST):
        path = root / rel
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc})", path=str(path)) from exc
        if not isinstance(data, dict):
            raise InputError(f"expected a JSON object, found {type(data).__name__}",
                             path=str(path))
        if rel == RELEASES_JSON:
            releases = data.get("releases", [])
            if not isinstance(releases, list) or not all(isinstance(r, dict) for r in releases):
                raise InputError("field 'releases' must be a list of objects", path=str(path))
            current = [r for r in releases if r.get("status") == "current"]
            if current and isinstance(current[-1].get("calibration"), dict):
                return current[-1]["calibration"]
        elif isinstance(data.get("calibration"), dict):
            return data["calibration"]
    return {}


def release_calibration(root: str | Path) -> dict:
    """The current calibration record of a release directory (empty when it names none)."""
    return _calibration(Path(root))


def _tables(root: Path, spec: SuiteSpec, kind: str) -> pa.Table | None:
    parts = []
    for split in spec.provenance_splits:
        path = root / provenance_file(kind, split)
        if not path.exists():
            continue
        try:
            table = pq.read_table(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"cannot read parquet ({exc})", path=str(path)) from exc
        parts.append(table.append_column("split", pa.array([split] * table.num_rows,
                                                             pa.string())))
    if not parts:
        return None
    return pa.concat_tables(parts, promote_options="permissive")


def _prefixed(table: pa.Table) -> pa.Table:
    """``query-id`` as ``split + SEP + query-id`` (the ``split`` column dropped)."""
    qid = pc.binary_join_element_wise(table.column("split"), pc.cast(table.column("query-id"),
                                                                     pa.string()), SEP)
    i = table.column_names.index("query-id")
    return table.set_column(i, "query-id", qid).drop_columns(["split"])


def read_release_answers(root: str | Path, spec: SuiteSpec) -> ReleaseAnswers:
    """Read the Stage A answers, verdicts, published theta_bt and item parameters of a release."""
    root = Path(root)
    cal = _calibration(root)
    params_path = str(cal.get("item_params", ""))
    params = ItemParams.read(root / params_path) if params_path and (
        root / params_path).exists() else None
    rules = dict(cal.get("reading_rules") or {})
    if not rules and params is not None and isinstance(params.extra.get("reading_rules"), dict):
        rules = dict(params.extra["reading_rules"])
    criteria = _tables(root, spec, "judge_criteria")
    bt = _tables(root, spec, "judge_bt")
    return ReleaseAnswers(
        criteria=_prefixed(criteria) if criteria is not None else None,
        tournament=_tables(root, spec, "judge_tournament"),
        theta_bt=bt.to_pandas() if bt is not None else None,
        item_params=params, item_params_path=params_path, rules=rules)


def _raw(path: Path, spec: SuiteSpec, kind: str) -> pa.Table:
    """A raw answers table for a release's refit: with ``split``, or one split only."""
    from rcp_data.calibration.tournament import load_tournament, read_tournament
    from rcp_data.calibration.verdicts import read_verdicts

    if kind == "judge_tournament":
        table = read_tournament(path)
        load_tournament(table, source=str(path))
    else:
        table = read_verdicts(path)
        if "split" in pq.read_schema(path).names:
            table = table.append_column("split", pq.read_table(path, columns=["split"])
                                        .column("split"))
    if "split" in table.column_names:
        return table.set_column(table.column_names.index("split"), "split",
                                pc.cast(table.column("split"), pa.string()))
    if len(spec.provenance_splits) != 1:
        raise InputError(f"the release has {len(spec.provenance_splits)} provenance splits: "
                         "the table needs a 'split' column to say which each row belongs to",
                         path=str(path), field="split")
    return table.append_column("split", pa.array([spec.provenance_splits[0]] * table.num_rows,
                                                 pa.string()))


def with_raw_answers(answers: ReleaseAnswers, spec: SuiteSpec, *,
                     tournament: Path | None = None, criteria: Path | None = None
                     ) -> ReleaseAnswers:
    """``answers`` with the Stage A answers and/or the verdicts read from raw tables."""
    from dataclasses import replace

    if tournament is not None:
        answers = replace(answers, tournament=_raw(Path(tournament), spec, "judge_tournament"))
    if criteria is not None:
        answers = replace(answers, criteria=_prefixed(_raw(Path(criteria), spec,
                                                           "judge_criteria")))
    return answers


def split_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame with prefixed ``query-id`` as ``split, query-id`` columns."""
    parts = frame["query-id"].astype(str).str.split(SEP, n=1, expand=True)
    out = frame.drop(columns="query-id")
    out.insert(0, "query-id", parts[1].to_numpy())
    out.insert(0, "split", parts[0].to_numpy())
    return out


def refit_release(answers: ReleaseAnswers, *, stage_a_rule: str | None = None,
                  stage_b_rule: str | None = None, device: str = "cpu"):
    """Re-run Stage A (when the release ships its answers, under ``stage_a_rule`` or the
    recorded rule) and the 2PL MAP; returns ``(calibration, stage A fit or None)`` with
    ``split`` and ``query-id`` columns in the calibration's thetas."""
    from rcp_data.calibration.bt import fit_stage_a
    from rcp_data.calibration.pipeline import attach_stage_a, calibrate
    from rcp_data.calibration.tournament import load_tournament
    from rcp_data.calibration.verdicts import count_verdicts

    if answers.criteria is None:
        raise InputError("the release ships no Stage B verdicts (provenance/judge_criteria)")
    stage_a = None
    if answers.tournament is not None:
        rule = stage_a_rule or answers.rules.get("stage_a") or DEFAULT_RULE
        stage_a = fit_stage_a(load_tournament(answers.tournament, source="provenance/"
                                              "judge_tournament"), rule=rule, device=device)
        bt = stage_a.thetas
    elif answers.theta_bt is not None:
        bt = answers.theta_bt
    else:
        raise InputError("the release ships neither Stage A answers "
                         "(provenance/judge_tournament) nor theta_bt (provenance/judge_bt)")
    thetas = bt.assign(**{"query-id": bt["split"].astype(str) + SEP + bt["query-id"].astype(
        str)}).drop(columns="split")
    counts = count_verdicts(answers.criteria, source="provenance/judge_criteria",
                            rule=stage_b_rule or answers.rules.get("stage_b") or DEFAULT_RULE)
    cal = calibrate(counts, thetas, progress=False, device=device,
                    thetas_source="provenance/judge_tournament" if stage_a is not None
                    else "provenance/judge_bt")
    if stage_a is not None:
        attach_stage_a(cal, stage_a)
    cal.thetas = split_keys(cal.thetas)
    if cal.queries is not None:
        cal.queries = split_keys(cal.queries)
    return cal, stage_a
