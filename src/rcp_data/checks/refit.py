"""Refit checks: a release's theta_bt and thetas are what its own answers give (issue 17).

From the release folder alone: the Stage A answers (``provenance-judge-tournament``) are read
under the recorded reading rule and refitted; the refit ``theta_bt`` must equal the published
``provenance-judge-bt`` within :data:`BT_TOLERANCE`. The 2PL MAP is refitted from the
verdicts (``provenance-judge-criteria``) and the refit ``theta_bt``; every judged ``theta`` of
the qrels and the item parameters must equal the published ones within
:data:`THETA_TOLERANCE` and :data:`PARAM_TOLERANCE`.

Tolerances: both fits stop at a maximum gradient of 1e-10 (Stage A) and 1e-9 (MAP), so two
converged runs (another machine, thread count or device) agree far inside them; a changed
answer moves theta_bt by orders of magnitude more. A release whose fit used answers it does
not ship (a judge run over more queries than released) cannot be refitted exactly: that check
is ``skipped`` and says why. Without the ``calibrate`` extra (torch) the checks are skipped.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.checks.integrity import Check
from rcp_data.core.errors import InputError
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.release import open_release
from rcp_data.model.suite import release_spec, which_suite

log = logging.getLogger(__name__)

BT_TOLERANCE = 1e-6
THETA_TOLERANCE = 1e-5
PARAM_TOLERANCE = 1e-5
MAX_SHOWN = 5


def _check(name: str, ok: bool, what: str, *, expected: str = "", found: str = "",
           where: str = "", status: str = "", details: list | None = None) -> Check:
    return Check(name, ok, what, expected, found, where, status=status,
                 details=list(details or [])[:20])


def _worst(frame: pd.DataFrame, a: str, b: str, label: str) -> tuple[float, list[str]]:
    diff = (frame[a] - frame[b]).abs().fillna(np.inf).to_numpy()
    order = np.argsort(-diff, kind="stable")[:MAX_SHOWN]
    shown = [f"split {frame['split'].iloc[i]}, query {frame['query-id'].iloc[i]!r}, document "
             f"{frame['corpus-id'].iloc[i]!r}: published {label} {frame[a].iloc[i]!r}, refit "
             f"{frame[b].iloc[i]!r}" for i in order]
    return (float(diff.max()) if len(diff) else 0.0), shown


def check_theta_bt(published: pd.DataFrame, refit: pd.DataFrame, rule: str) -> Check:
    """The refit theta_bt equals the published one for every (split, query, document)."""
    keys = ["split", "query-id", "corpus-id"]
    m = published[[*keys, "theta_bt"]].merge(
        refit[[*keys, "theta_bt"]].rename(columns={"theta_bt": "refit"}), how="outer",
        on=keys, indicator=True)
    what = (f"theta_bt refitted from provenance-judge-tournament (rule {rule}) equals "
            "provenance-judge-bt")
    missing = m[m["_merge"] != "both"]
    worst, shown = _worst(m[m["_merge"] == "both"], "theta_bt", "refit", "theta_bt")
    details = [f"{'only published' if r['_merge'] == 'left_only' else 'only refit'}: split "
               f"{r['split']}, query {r['query-id']!r}, document {r['corpus-id']!r}"
               for _, r in missing.head(MAX_SHOWN).iterrows()]
    ok = not len(missing) and worst <= BT_TOLERANCE
    return _check("refit-theta-bt", ok, what, expected=f"max |diff| <= {BT_TOLERANCE:g}",
                  found=f"max |diff| {worst:.3g} over {int((m['_merge'] == 'both').sum()):,} "
                        f"documents" + (f"; {len(missing):,} unmatched" if len(missing) else ""),
                  where="provenance/judge_bt", details=[] if ok else details + shown)


def _published_thetas(root: Path, spec: SuiteSpec) -> pd.DataFrame:
    rel = open_release(root, suite=spec)
    parts = []
    for subset in spec.subset_names:
        if not rel.has(subset, "qrels"):
            continue
        q = rel.table(subset, "qrels", columns=["query-id", "corpus-id", "theta"])
        q = q[q["theta"].notna()]
        parts.append(q.assign(split=spec.provenance_split(subset)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["query-id", "corpus-id", "theta", "split"])


def check_thetas(root: Path, spec: SuiteSpec, cal, answers) -> list[Check]:
    """The refit thetas and item parameters equal the published ones."""
    published_n = answers.item_params.extra.get("n_responses") if answers.item_params else None
    if published_n is not None and int(published_n) != cal.diagnostics["n_responses"]:
        return [_check("refit-thetas", True, "theta refitted from the release's verdicts and "
                       "theta_bt", status="skipped",
                       found=f"the fit used {int(published_n):,} verdict responses; the release "
                             f"ships {cal.diagnostics['n_responses']:,} (answers outside the "
                             "released queries): no exact refit", where=answers.item_params_path)]
    keys = ["split", "query-id", "corpus-id"]
    pub = _published_thetas(root, spec)
    m = pub.merge(cal.thetas[[*keys, "theta"]].rename(columns={"theta": "refit"}), how="left",
                  on=keys)
    worst, shown = _worst(m, "theta", "refit", "theta")
    ok = worst <= THETA_TOLERANCE
    checks = [_check("refit-thetas", ok, "every judged theta of the qrels equals the 2PL MAP "
                     "refitted from provenance-judge-criteria and theta_bt",
                     expected=f"max |diff| <= {THETA_TOLERANCE:g}",
                     found=f"max |diff| {worst:.3g} over {len(m):,} judged pairs",
                     where="{subset}/qrels.parquet", details=[] if ok else shown)]
    if answers.item_params is not None:
        pub_p = np.concatenate([answers.item_params.gamma, answers.item_params.beta])
        new_p = np.concatenate([cal.params.gamma, cal.params.beta])
        diff = float(np.abs(pub_p - new_p).max()) if len(pub_p) == len(new_p) else np.inf
        ok = diff <= PARAM_TOLERANCE
        checks.append(_check(
            "refit-item-params", ok, "the item parameters equal the refit's",
            expected=f"max |diff| <= {PARAM_TOLERANCE:g}", found=f"max |diff| {diff:.3g}",
            where=answers.item_params_path,
            details=[] if ok else [f"published gamma {list(answers.item_params.gamma)}, beta "
                                   f"{list(answers.item_params.beta)}; refit gamma "
                                   f"{list(cal.params.gamma)}, beta {list(cal.params.beta)}"]))
    return checks


def refit_checks(root: str | Path, spec: SuiteSpec | None = None, *,
                 device: str = "cpu") -> list[Check]:
    """Refit Stage A and the 2PL from ``root`` alone and compare with what it publishes."""
    root = Path(root)
    if importlib.util.find_spec("torch") is None:
        return [_check("refit", True, "theta_bt and theta refitted from the release's answers",
                       status="skipped", found="needs the 'calibrate' extra (torch)")]
    from rcp_data.calibration.refit import read_release_answers, refit_release

    if spec is None:
        suite = which_suite(root)
        if suite is None:
            return [_check("refit", False, "theta_bt and theta refitted from the release's "
                           "answers", found="cannot tell the suite", where=str(root))]
        spec = release_spec(root, suite)
    answers = read_release_answers(root, spec)
    if answers.tournament is None and answers.theta_bt is None:
        return [_check("refit", True, "theta_bt and theta refitted from the release's answers",
                       status="absent", found="the release ships neither "
                       "provenance-judge-tournament nor provenance-judge-bt")]
    fit = answers.item_params.extra.get("fit") if answers.item_params is not None else None
    if isinstance(fit, str) and fit.startswith("none"):
        return [_check("refit", True, "theta_bt and theta refitted from the release's answers",
                       status="skipped", found=f"the item parameters say they are no fit ({fit})",
                       where=answers.item_params_path)]
    if answers.tournament is not None and not answers.rules.get("stage_a"):
        return [_check("refit", True, "theta_bt and theta refitted from the release's answers",
                       status="skipped", found="no Stage A reading rule is recorded (neither the "
                       "build manifest nor releases.json names one), so there is no fit to "
                       "reproduce", where=str(root))]
    try:
        cal, stage_a = refit_release(answers, device=device)
    except InputError as exc:
        return [_check("refit", False, "theta_bt and theta refitted from the release's answers",
                       expected="a refit", found=exc.message, where=str(root))]
    checks = []
    if stage_a is None:
        checks.append(_check("refit-theta-bt", True, "theta_bt refitted from the Stage A "
                             "answers", status="absent", found="no provenance-judge-tournament: "
                             "the published theta_bt is taken as given"))
    elif answers.theta_bt is None:
        checks.append(_check("refit-theta-bt", False, "theta_bt refitted from the Stage A "
                             "answers equals the published one", expected="provenance-judge-bt",
                             found="missing"))
    else:
        checks.append(check_theta_bt(answers.theta_bt, stage_a.thetas, stage_a.stats.rule))
    checks += check_thetas(root, spec, cal, answers)
    log.info("refit checks of %s: %d checks, %d failed", root, len(checks),
             sum(not c.ok for c in checks))
    return checks
