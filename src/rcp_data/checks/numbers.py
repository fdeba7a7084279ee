"""The numbers of a revision: replayed tables against its card and, where it applies, the paper.

``provenance-runs`` replayed under both shown tie rules (doc-id, group-mean) and every view
(ViDoRe: native and languages) must reproduce every table of the card at that revision (0.05
points: one printed decimal). Against the paper's numbers (``--reference``, default
``provenance/paper_values.json``) only when the revision is the release the paper used;
otherwise the differences are reported as a diff, not a failure. Synthetic suites have no
paper. The counts the card's prose states are compared with the data. One load of the runs
serves every table, and the card's regeneration (:mod:`rcp_data.checks.regenerated`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data import resources
from rcp_data.checks.reports import Check
from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.io import read_json
from rcp_data.core.specs import RULE_LETTERS, SHOWN_TIE_RULES, SuiteSpec
from rcp_data.model.card_format import METRIC_TITLES, PAPER_K, card_body, tables_rule
from rcp_data.model.history import History, ReleaseRecord, history_path, read_history, same_commit
from rcp_data.model.layout import CARD_FILE
from rcp_data.model.release import Release


def default_reference() -> Path:
    """The project's record of the paper's numbers."""
    return resources.provenance_dir() / "paper_values.json"


# -- counts the card states ---------------------------------------------------------------------
# Phrases of the cards (this project's template and the published cards) that state totals:
# (pattern, {group number: count name}).
CARD_COUNT_PATTERNS: tuple[tuple[str, dict[int, str]], ...] = (
    (r"\(([\d,]+) queries, split", {1: "queries"}),
    (r"([\d,]+) queries in total", {1: "queries"}),
    (r"([\d,]+) queries over [\d,]+ (?:datasets|subsets|tasks)", {1: "queries"}),
    (r"([\d,]+) of ([\d,]+) pool pairs", {1: "gt_injected", 2: "pool_pairs"}),
    (r"([\d,]+) pool pairs over ([\d,]+) queries", {1: "pool_pairs", 2: "queries"}),
    (r"([\d,]+) of ([\d,]+) passages \(", {1: "repaired_passages", 2: "corpus_documents"}),
)


def data_totals(rel: Release, tables: dict) -> dict[str, int]:
    """Totals over the subsets: queries, pool pairs, injected documents, corpus documents (a
    shared corpus once) and, as the build recorded it, the repaired passages."""
    from rcp_data.checks.integrity import subset_counts

    totals: dict[str, int] = {}
    corpora = {}
    for t in tables.values():
        for k, v in subset_counts(t).items():
            totals[k] = totals.get(k, 0) + v
        corpora[id(t.corpus_ids)] = len(t.corpus_ids)
    totals["corpus_documents"] = sum(corpora.values())
    try:
        manifest = rel.manifest
    except InputError:
        manifest = None
    changed = manifest.source_fact("corpus", "repair", "changed_vs_raw") if manifest else None
    if isinstance(changed, int):
        totals["repaired_passages"] = changed
    return totals


def check_card_counts(card_text: str, totals: dict[str, int]) -> list[Check]:
    """Totals the card's prose states (queries, pool pairs, injected documents, corpus size,
    repaired passages) equal the data (the repair count: the build manifest's record)."""
    body = card_body(card_text)
    stated, wrong = [], []
    for pattern, groups in CARD_COUNT_PATTERNS:
        for m in re.finditer(pattern, body):
            for g, name in groups.items():
                value = int(m.group(g).replace(",", ""))
                stated.append(name)
                if name in totals and value != totals[name]:
                    wrong.append(f"the card says {m.group(0)!r}: {name} {value:,}, the data has "
                                 f"{totals[name]:,}")
    if not stated:
        return [Check("card-counts", True, "counts the card states equal the data",
                      expected="statements of queries / pool pairs / injected documents / "
                               "repaired passages",
                      found="none found", where=CARD_FILE, status="absent")]
    return [Check("card-counts", not wrong, "counts the card states (queries, pool pairs, "
                  "injected documents, corpus size, repaired passages) equal the data",
                  expected=", ".join(f"{k} {v:,}" for k, v in totals.items()),
                  found=f"{len(stated)} statements, {len(wrong)} differ", where=CARD_FILE,
                  details=wrong)]


@dataclass
class Replayed:
    """Replayed tables of a release, keyed like :class:`rcp_data.scoring.compare.CellKey`,
    and the view tables themselves per ``(k, tie rule, view)`` (fractions)."""

    per_query: dict[int, pd.DataFrame]            # k -> per-query DataFrame (all rules)
    tableset: object                              # compare.TableSet (kind "replay")
    tables: dict[tuple[int, str, str], dict[str, pd.DataFrame]] = field(default_factory=dict)
    data: object = None                           # the loaded release (replay.ReleaseData)
    # {subset: (Q, R)} qrel-nDCG@PAPER_K with exponential gain under the paper's tie rule, scored in
    # the replay's own pass (None: not scored)
    exp_values: dict[str, np.ndarray] | None = None

    def card_results(self, spec: SuiteSpec) -> dict:
        """``{(view, tie rule, k): ReplayResult}`` at the card's cutoffs as the card module
        renders them (:func:`rcp_data.documents.card.replay_results`), from this replay."""
        from rcp_data.scoring.replay import ReplayResult

        out = {}
        for k in spec.card_k:
            pq_ = self.per_query[k]
            groups = [(rule, view, tables) for (kk, rule, view), tables in self.tables.items()
                      if kk == k]
            # each rule's rows selected once, shared by its views (read only)
            by_rule = {rule: pq_[pq_["tie_rule"] == rule] for rule in {g[0] for g in groups}}
            out.update({(view, rule, k): ReplayResult(k=k, tie_rule=rule, view=view,
                                                      spec=spec, per_query=by_rule[rule],
                                                      tables=tables)
                        for rule, view, tables in groups})
        return out


def card_groups(spec: SuiteSpec) -> set[tuple[int, str, str]]:
    """The (k, tie rule, view) groups the card renders: the shown rules and the suite's paper
    rule, in every view the card shows, at each of its cutoffs (``spec.card_k``)."""
    rules = set(SHOWN_TIE_RULES) | {spec.paper_tie_rule}
    return {(k, r, v) for k in spec.card_k for r in rules for v in spec.card_views}


def _take_exp(pq_: pd.DataFrame, data, rule: str) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """The per-query table without its ``qrel_exp_ndcg`` column, and that column under
    ``rule`` as ``{subset: (Q, R)}`` (runs in the subset's model order)."""
    values = pq_["qrel_exp_ndcg"].to_numpy(dtype=np.float64)
    at = pq_["tie_rule"].to_numpy() == rule
    subset = pq_["subset"].to_numpy()
    out = {}
    for name, sub in data.subsets.items():
        rows = values[at & (subset == name)]
        out[name] = rows.reshape(len(sub.models), sub.n_queries).T.copy()
    return pq_.drop(columns="qrel_exp_ndcg"), out


def replay_tables(root: Path, spec: SuiteSpec, groups: set[tuple[int, str, str]], *,
                  exp_rule: str | None = None) -> Replayed:
    """Replay ``groups`` of (k, tie rule, view) from one load of the release; with
    ``exp_rule`` (a rule of the groups at the paper's k), also qrel-nDCG with exponential gain
    under that rule, from the same pass (:attr:`Replayed.exp_values`)."""
    from rcp_data.scoring.compare import CellKey, TableSet
    from rcp_data.scoring.replay import load_release, score_queries, summarize

    data = load_release(root, spec, baselines=False)    # the card's metrics only
    cells = {}
    per_query = {}
    views = {}
    exp_values = None
    for k in sorted({g[0] for g in groups}):
        rules = sorted({r for kk, r, _ in groups if kk == k})
        exp = k == PAPER_K and exp_rule in rules
        pq_ = score_queries(data, k=k, tie_rules=rules, exp_gain=exp)
        if exp:
            pq_, exp_values = _take_exp(pq_, data, exp_rule)
        per_query[k] = pq_
        for kk, rule, view in sorted(groups):
            if kk != k:
                continue
            tables = summarize(pq_, spec, view=view, tie_rule=rule)
            views[(k, rule, view)] = tables
            for metric, table in tables.items():
                values = table.to_numpy(dtype=np.float64)   # one array, not a lookup a cell
                for i, j in zip(*np.nonzero(~np.isnan(values)), strict=True):
                    cells[CellKey(metric, k, rule, view, str(table.index[i]),
                                  str(table.columns[j]))] = 100 * float(values[i, j])
    return Replayed(per_query, TableSet("replay", "replay", spec.name, cells, 0.0), views, data,
                    exp_values)


def _cell_name(spec: SuiteSpec, row: dict) -> str:
    col = "Mean" if row["column"] == "mean" else spec.column_label(row["column"])
    return (f"{METRIC_TITLES[row['metric']]}@{row['k']} rule ({RULE_LETTERS[row['tie_rule']]}), "
            f"view {row['view']}, row {spec.short_name(spec.hub_id(row['model']))}, "
            f"column {col}")


def _fmt(v: float | None) -> str:
    return "missing" if v is None else f"{v:.2f}"


def check_card_tables(card_tables, replayed, spec: SuiteSpec, expected: set) -> list[Check]:
    """Every table of the card matches the replay at one decimal; the card shows them all, and
    none at a cutoff its spec does not name (``[suite] card_k``)."""
    from rcp_data.scoring.compare import compare_tables

    checks = []
    have = card_tables.groups()
    missing = sorted(expected - have)
    stray = sorted({k for _, k, _, _ in have} - set(spec.card_k))
    found = f"{len(have)} tables" + (f", {len(missing)} missing" if missing else "")
    if stray:
        found += ", tables at k = " + ", ".join(map(str, stray))
    checks.append(Check(
        "card-tables-shown", not missing and not stray, "the card shows every replayed table "
        "(its tie rule's, every view, at the spec's card_k "
        f"{', '.join(map(str, spec.card_k))}) and no other cutoff",
        expected=f"{len(expected)} tables", found=found, where=CARD_FILE,
        details=[f"{METRIC_TITLES[m]}@{k} rule ({RULE_LETTERS[r]}), view {v}"
                 for m, k, r, v in missing]
        + [f"@{k}: a cutoff the suite spec's card_k ({list(spec.card_k)}) does not name"
           for k in stray]))
    cmp = compare_tables(replayed, card_tables, spec)
    bad = [r for r in cmp.rows if r["status"] == "failed"]
    details = [f"{_cell_name(spec, r)}: card {_fmt(r['reference'])}, replay "
               f"{_fmt(r['tables'])}" for r in bad]
    # cells the replay has in the card's tables but the card lacks (a dropped row or column)
    shared = have & replayed.groups()
    lacking = sorted((c for c in replayed.cells if (c.metric, c.k, c.tie_rule, c.view) in shared
                      and c not in card_tables.cells),
                     key=lambda c: (c.metric, c.k, c.tie_rule, c.view, c.model, c.column))
    details += [f"{_cell_name(spec, vars(c))}: card has no such cell, replay "
                f"{replayed.cells[c]:.2f}" for c in lacking]
    n_bad = len(bad) + len(lacking)
    checks.append(Check(
        "card-tables", n_bad == 0, "every card table cell equals the replay of provenance-runs "
        "(0.05 points: one printed decimal)", expected=f"{len(cmp.rows)} cells matching",
        found=f"{cmp.count('matched')} matched, {n_bad} differ", where=CARD_FILE,
        details=details))
    return checks


def paper_release(spec: SuiteSpec, history: History | None) -> dict | None:
    """Which release/commit the paper used: the release history's ``paper`` entry (the one at
    the revision, else the project's ``release/<suite>.json``), else the spec's revision."""
    info = history.paper if history is not None else None
    if info is None:
        path = history_path(spec.name)
        if path.exists():
            project = read_history(path)
            if history is None or project.repo == history.repo:
                info = project.paper
    info = dict(info or {})
    if spec.paper_revision and not info.get("revision"):
        info["revision"] = spec.paper_revision
    return info or None


def paper_applies(spec: SuiteSpec, history: History | None, release: ReleaseRecord | None,
                  sha: str | None) -> tuple[bool, str]:
    """Whether this revision is the release the paper's tables were replayed from."""
    info = paper_release(spec, history)
    if not info:
        return False, "no release of this suite is known to be the paper's"
    rev = info.get("revision")
    if sha and rev and same_commit(sha, rev):
        return True, f"revision {sha} is the commit the paper's tables pin"
    number = info.get("release")
    if release is not None and number is not None and release.release == number:
        return True, f"this revision holds release {number}, the release the paper used"
    held = f"release {release.release}" if release is not None else "an unknown release"
    used = f"release {number}" if number is not None else "an unrecorded release"
    return False, (f"this revision holds {held}; the paper used {used}"
                   + (f" (commit {rev})" if rev else ""))


def check_paper(reference: Path, replayed, per_query: dict, spec: SuiteSpec, applies: bool,
                reason: str, root: Path | None = None, data=None,
                exp_values: dict | None = None) -> list[Check]:
    """The paper's numbers: a failure when they apply, else a diff for information. With the
    release's ``root``, also the agreement numbers it allows recomputing
    (:mod:`rcp_data.checks.paper_agreement`), from ``data`` when the release is loaded already
    (and ``exp_values``, :attr:`Replayed.exp_values`, when the replay scored them)."""
    from rcp_data.scoring.compare import compare_tables, load_known_deviations, load_tables

    checks = []
    raw = read_json(reference)
    key = spec.paper_key or spec.name
    status_bad = "failed" if applies else "diff"
    if key in raw.get("leaderboards", {}):
        paper = load_tables(reference, spec)
        cmp = compare_tables(replayed, paper, spec, known=load_known_deviations())
        off = [r for r in cmp.rows if r["status"] == "failed"]
        known = cmp.count("known")
        diffs = [abs(r["diff"]) for r in off if r["diff"] is not None]
        found = (f"{cmp.count('matched')} matched, {known} known deviations, {len(off)} differ"
                 + (f" (max {max(diffs):.2f} points)" if diffs else ""))
        checks.append(Check(
            "paper-tables", applies and not off or not applies,
            f"replayed tables vs the paper's printed numbers ({reason})",
            expected=f"{len(cmp.rows)} cells within 0.05 points or a known deviation",
            found=found, where=str(reference), status=("ok" if not off else status_bad),
            details=[f"{_cell_name(spec, r)}: paper {_fmt(r['reference'])}, replay "
                     f"{_fmt(r['tables'])}" for r in off]))
    pairs_key = f"{key}_pairs"
    if pairs_key in raw:
        from rcp_data.scoring.pairs import TRECDL_YEARS, compare_with_paper, trecdl_pairs

        years = {y: s for y, s in TRECDL_YEARS.items() if s in spec.subset_names}
        pq_ = per_query[PAPER_K]
        stats = trecdl_pairs(pq_, subsets=years, tie_rule=spec.paper_tie_rule)
        rows = compare_with_paper(stats, raw[pairs_key])
        off = [r for r in rows if r["status"] != "matched"]
        checks.append(Check(
            "paper-pairs", applies and not off or not applies,
            f"pair statistics vs the paper's ({reason})", expected=f"{len(rows)} values equal",
            found=f"{len(rows) - len(off)} equal, {len(off)} differ", where=str(reference),
            status=("ok" if not off else status_bad),
            details=[f"{r['year']} {r['field']}: paper {r['paper']}, replay {r['computed']}"
                     for r in off]))
    entries = raw.get("agreement", {}).get("entries", [])
    if root is not None and entries:
        from rcp_data.checks.paper_agreement import check_paper_agreement

        try:
            checks += check_paper_agreement(entries, root, spec, per_query[PAPER_K], applies,
                                            reason, str(reference), data=data,
                                            exp_values=exp_values)
        except (InputError, UsageError) as exc:
            checks.append(Check("paper-agreement", False, "agreement numbers vs the paper's",
                                found=exc.message, where=str(reference)))
    if not checks:
        checks.append(Check("paper-tables", True, "the paper's numbers for this suite",
                            expected=f"{key!r} in {reference}", found="absent",
                            where=str(reference), status="absent"))
    return checks


def number_checks(rel: Release, card_text: str | None, history: History | None,
                  release: ReleaseRecord | None, reference: Path, *,
                  pre_policy: bool = False, for_card: bool = False
                  ) -> tuple[list[Check], Replayed | None]:
    """Replay, card tables and the paper of a release (at its pinned revision, if any);
    returns the checks and the replay (None when the runs cannot be replayed). ``pre_policy``: a revision published before this project's
    release policy, whose card may print no result tables (TREC-DL's does not).
    ``for_card``: replay also every table the card renders (its regeneration reuses them)."""
    from rcp_data.scoring.compare import load_tables
    from rcp_data.scoring.replay import METRICS

    root, spec, sha = rel.root, rel.spec, rel.revision
    checks: list[Check] = []
    groups = {(k, r, v) for k in spec.card_k for r in SHOWN_TIE_RULES for v in spec.card_views}
    if for_card:
        groups |= card_groups(spec)
    card_tables = None
    if card_text is not None:
        try:
            card_tables = load_tables(root / CARD_FILE, spec)
        except InputError as exc:
            checks.append(Check(
                "card-tables", pre_policy, "the card shows the replayed tables",
                expected="result tables (e.g. 'RCP-nDCG@10 (%), rule (a)')",
                found=exc.message + ("; a card published before the release policy: the "
                                     "replay is compared with the paper only" if pre_policy
                                     else ""),
                where=CARD_FILE, status="absent" if pre_policy else ""))
        else:
            groups |= {(k, r, v) for _, k, r, v in card_tables.groups()}
    applies, reason = (False, "synthetic suite") if spec.synthetic else \
        paper_applies(spec, history, release, sha)
    if not spec.synthetic:
        groups.add((PAPER_K, spec.paper_tie_rule, spec.paper_view))
    try:
        replayed = replay_tables(root, spec, groups,
                                 exp_rule=None if spec.synthetic else spec.paper_tie_rule)
    except (InputError, UsageError) as exc:
        checks.append(Check("replay", False, "provenance-runs replay (every run scores every "
                            "candidate of every query)", expected="a complete replay",
                            found=exc.message, where="provenance-runs"))
        return checks, None
    n_cells = len(replayed.tableset.cells)
    checks.append(Check("replay", True, "provenance-runs replayed under "
                        f"{', '.join(sorted({r for _, r, _ in groups}))}, views "
                        f"{', '.join(sorted({v for _, _, v in groups}))}",
                        found=f"{n_cells} cells", where="provenance-runs"))
    if card_tables is not None:
        # the tables a card prints: one rule's (the other is summarised)
        expected = {(m, k, tables_rule(spec), v) for m in METRICS for k in spec.card_k
                    for v in spec.card_views}
        checks += check_card_tables(card_tables, replayed.tableset, spec, expected)
    if spec.synthetic:
        checks.append(Check("paper-tables", True, "the paper's numbers",
                            found="not compared: a SYNTHETIC suite has no paper numbers",
                            status="skipped"))
    else:
        checks += check_paper(reference, replayed.tableset, replayed.per_query, spec, applies,
                              reason, root=root, data=replayed.data,
                              exp_values=replayed.exp_values)
    return checks, replayed


__all__ = ["Replayed", "card_groups", "check_card_counts", "check_card_tables",
           "check_paper", "data_totals", "default_reference", "number_checks", "paper_applies",
           "paper_release", "replay_tables"]
