"""Judge provenance: the verdict table, the thetas and gains, and the recorded counts agree.

- ``judge-criteria``: the verdict table's criterion columns are the item parameters' C1..Cn and
  every verdict is 0, 1 or null;
- ``judge-verdicts``: every judged pool document has verdict rows, and every verdict row names
  a judged pool document of a released query;
- ``judge-thetas``: ``theta`` is set exactly on the judged pool documents (the gains of those
  are the link of their theta: the integrity check ``gains``);
- ``judge-counts``: the per-subset counts the build manifest records (qrels rows, verdict rows,
  queries with exclusions, positives outside the pool) equal the data;
- ``refit``: the Stage A refit (``rcp_data.checks.refit``), when that module exists.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.checks.integrity import SubsetTables, _bools
from rcp_data.checks.reports import Check
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import float_values
from rcp_data.model.keys import contains, strings
from rcp_data.model.layout import BUILD_MANIFEST, provenance_file
from rcp_data.model.release import Release
from rcp_data.model.schemas import criteria_columns
from rcp_data.model.tables import read_release_table

log = logging.getLogger(__name__)


def _judged(t: SubsetTables, pool_keys: np.ndarray) -> np.ndarray:
    """Which pool rows were judged: the pool's ``judged`` flag, else a theta in qrels."""
    cols = t.pool.column_names
    if "judged" in cols:
        return _bools(t.pool.column("judged"), t.pool.num_rows, False)
    q_keys = t.qrels_keys
    with_theta = q_keys[~np.isnan(float_values(t.qrels.column("theta")))]
    return contains(pool_keys, with_theta)


def _pair(t: SubsetTables, key: int) -> str:
    q, d = t.keys.name(int(key))
    return f"subset {t.name}, query {q}, document {d}"


def check_judge(rel: Release, params: ItemParams, tables: dict[str, SubsetTables]
                ) -> list[Check]:
    """The judge checks of every provenance split whose verdict table is present."""
    crit_problems, verdict_problems, theta_problems = [], [], []
    n_verdicts = n_judged = 0
    verdict_rows: dict[str, int] = {}
    splits: dict[str, list[SubsetTables]] = {}
    for name, t in tables.items():
        splits.setdefault(rel.spec.provenance_split(name), []).append(t)
    read_any = False
    for split, members in splits.items():
        path = provenance_file("judge_criteria", split)
        crit = None
        if rel.has_provenance("judge_criteria", split):
            crit = read_release_table(rel.root / path, "judge_criteria")
            read_any = True
            cols = criteria_columns(crit.column_names)
            if cols != params.criteria:
                crit_problems.append(f"{path}: criteria {cols}, the item parameters have "
                                     f"{params.criteria}")
            for c in cols:
                values = crit.column(c).drop_null()
                bad = pc.sum(pc.invert(pc.is_in(values, value_set=pa.array([0, 1], values.type))))
                if bad.as_py():
                    crit_problems.append(f"{path}: column {c} has {bad.as_py()} verdicts other "
                                         "than 0 or 1")
        crit_q = strings(crit.column("query-id")) if crit is not None else None
        released = set()
        for t in members:
            released |= set(t.query_ids.to_pylist())
            pool_keys = t.pool_keys
            judged = _judged(t, pool_keys)
            judged_keys = pool_keys[judged]
            n_judged += len(judged_keys)
            q_keys = t.qrels_keys
            theta_keys = q_keys[~np.isnan(float_values(t.qrels.column("theta")))]
            stray = theta_keys[~contains(theta_keys, judged_keys)]
            theta_problems += [f"{_pair(t, k)}: a theta, but not a judged pool document"
                               for k in stray[:5]]
            if crit is None:
                continue
            mine = pc.is_in(crit_q, value_set=t.query_ids)
            rows = crit.filter(mine)
            verdict_rows[t.name] = rows.num_rows
            n_verdicts += rows.num_rows
            c_keys = t.keys(strings(rows.column("query-id")), strings(rows.column("corpus-id")))
            lacking = judged_keys[~contains(judged_keys, c_keys)]
            verdict_problems += [f"{_pair(t, k)}: judged, but no verdict row"
                                 for k in lacking[:5]]
            if len(lacking) > 5:
                verdict_problems.append(f"subset {t.name}: {len(lacking)} judged documents "
                                        "without verdict rows in all")
            outside = np.unique(c_keys[~contains(c_keys, judged_keys)])
            verdict_problems += [f"{_pair(t, k)}: verdict rows, but not a judged pool document"
                                 if k >= 0 else f"subset {t.name}: verdict rows name a document "
                                 "outside the pool" for k in outside[:5]]
        if crit is not None:
            unknown = pc.unique(crit_q.filter(pc.invert(pc.is_in(
                crit_q, value_set=pa.array(sorted(released), pa.string()))))).to_pylist()
            verdict_problems += [f"{path}: verdict rows for query {q}, which no subset releases"
                                 for q in unknown[:5]]
    if not read_any:
        return [Check("judge-verdicts", True, "provenance-judge-criteria present",
                      "present", "absent", "provenance/judge_criteria", status="absent"),
                *_counts(rel, tables, verdict_rows), *refit_hook(rel)]
    return [
        Check("judge-criteria", not crit_problems, "the verdict table has the item parameters' "
              "criteria and only 0/1/null verdicts", expected=", ".join(params.criteria),
              found=f"{len(crit_problems)} problems", where="provenance-judge-criteria",
              details=crit_problems),
        Check("judge-verdicts", not verdict_problems, "every judged pool document has verdict "
              "rows, and every verdict row names a judged pool document",
              expected=f"{n_judged} judged documents", found=f"{n_verdicts} verdict rows, "
              f"{len(verdict_problems)} problems", where="provenance-judge-criteria",
              details=verdict_problems),
        Check("judge-thetas", not theta_problems, "theta is set only on judged pool documents",
              expected=f"{n_judged} judged documents", found=f"{len(theta_problems)} others",
              where="qrels", details=theta_problems),
        *_counts(rel, tables, verdict_rows),
        *refit_hook(rel),
    ]


def _counts(rel: Release, tables: dict[str, SubsetTables], verdict_rows: dict[str, int]
            ) -> list[Check]:
    """The build manifest's per-subset counts of the judged data equal the data."""
    counts = rel.manifest.counts if rel.manifest else {}
    if not counts:
        return [Check("judge-counts", True, "build manifest counts", "present", "absent",
                      BUILD_MANIFEST, status="absent")]
    problems, compared = [], 0
    for name, t in tables.items():
        recorded = counts.get(name) or {}
        score = float_values(t.qrels.column("score"))
        theta = float_values(t.qrels.column("theta"))
        # (excluded_pairs is left out: a source reader's notes give it its own meaning, e.g.
        # BRIGHT's count of upstream exclusion pairs)
        data = {
            "qrels_rows": t.qrels.num_rows,
            "positives_outside_pool": int((rel.spec.positive_mask(score) & np.isnan(theta)).sum()),
            "queries_with_exclusions": t.excluded.num_rows if t.excluded is not None else 0,
            "verdict_rows": verdict_rows.get(name),
        }
        for key, value in data.items():
            if key not in recorded or value is None:
                continue
            compared += 1
            if int(recorded[key]) != value:
                problems.append(f"subset {name}: {key} recorded {recorded[key]}, the data has "
                                f"{value}")
    return [Check("judge-counts", not problems, "the counts the build recorded (qrels rows, "
                  "verdict rows, queries with exclusions, positives outside the pool) equal the "
                  "data", expected="equal", found=f"{compared} counts, "
                  f"{len(problems)} differ", where=BUILD_MANIFEST, details=problems)]


# -- the Stage A refit ------------------------------------------------------------------------
def refit_hook(rel: Release) -> list[Check]:
    """The Stage A refit (:func:`rcp_data.checks.refit.refit_checks`): theta_bt refitted from
    ``provenance-judge-tournament`` under the recorded rule, then the 2PL, each compared with the
    published values within its stated tolerance; ``absent`` for a release without Stage A
    tables, ``skipped`` where the fit cannot be re-run here (no torch)."""
    from rcp_data.checks.refit import refit_checks

    try:
        return list(refit_checks(rel.root, rel.spec))
    except Exception as exc:  # a malformed release is a failed check, never a traceback
        log.debug("refit failed", exc_info=True)
        return [Check("refit", False, "theta_bt and theta refitted from the release's answers",
                      expected="a refit from the release's own tables",
                      found=f"could not refit: {exc}", where="provenance/")]


__all__ = ["check_judge", "refit_hook"]
