"""``rcp-data verify``: prove a pinned release is intact and reproduces what was published.

Steps (issue 4; design note ``release-layout.md``, *Which numbers a revision must reproduce*
and *Releases*):

1. **Pin.** A tag or branch is resolved to its commit sha and everything is downloaded strictly
   by that sha into the client's cache (``--cache-dir``). A tag must agree with
   ``provenance/releases.json`` *at that revision*: the release the commit holds has
   ``"revision": null``, every other release names its sha. A tag moved onto another commit
   (e.g. ``v1`` moved onto the ``v2`` commit, whose releases.json names v1's real sha) fails.
2. **Integrity** (:mod:`rcp_data.checks.integrity`), with the item parameters and link of the release
   the commit holds and the configs of the card's YAML.
3. **Numbers.** ``provenance-runs`` replayed under both shown tie rules (doc-id, group-mean) and
   every view (ViDoRe: native and languages) must reproduce every table of the card at that
   revision (0.05 points: one printed decimal). Against the paper's numbers (``--reference``,
   default ``provenance/paper_values.json``) only when the revision is the release the paper
   used; otherwise the differences are reported as a diff, not a failure. Synthetic suites
   have no paper.
4. **Report** per check: what, expected, found, where; ``--json`` for machines.

Exit codes: 0 every check holds, 1 a check failed, 2 the verification could not run.
Nothing is written to the Hub, and nothing outside the download cache.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rcp_data import resources
from rcp_data.checks.integrity import run_integrity
from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.gains import DEFAULT_LINK, ItemParams, link_name
from rcp_data.core.history import History, Release, same_commit, validate_history
from rcp_data.core.hub_client import HubClient, PinnedRevision, parse_hf_path
from rcp_data.core.io import read_json
from rcp_data.core.layout import (
    CARD_FILE,
    RELEASES_JSON,
    ReleaseDir,
    card_configs,
    read_manifest,
    release_is_synthetic,
    release_spec,
)
from rcp_data.core.reports import VERIFY_SCHEMA, Check, VerifyReport
from rcp_data.core.specs import SHOWN_TIE_RULES, SuiteSpec

log = logging.getLogger(__name__)

SCHEMA = VERIFY_SCHEMA
CARD_K = 10


# -- step 1: the pin -----------------------------------------------------------------------------
def read_release_history(root: Path) -> tuple[History | None, list[str]]:
    """releases.json of a release directory and its problems (None when absent).

    Unreadable JSON or an unknown schema raises :class:`InputError` (the check cannot run).
    """
    path = Path(root) / RELEASES_JSON
    if not path.exists():
        return None, []
    history = History.from_dict(read_json(path), source=str(path))
    problems = validate_history(history)
    # inside a commit only the latest release may be "the commit holding this file" (null);
    # every older release's sha is always written (design note, Releases)
    problems += [f"release {r.release} ({r.tag}): an older release names its sha in "
                 "'revision', got null" for r in history.releases[:-1] if r.revision is None]
    return history, problems


def held_release(history: History, sha: str | None) -> Release | None:
    """The release a commit holds: the one with ``revision: null``, else the one naming
    ``sha``, else the latest (a later commit that changed only card, task file and history)."""
    if not history.releases:
        return None
    nulls = [r for r in history.releases if r.revision is None]
    if nulls:
        return nulls[-1]
    if sha:
        named = [r for r in history.releases if same_commit(r.revision, sha)]
        if named:
            return named[-1]
    return history.latest


def check_pin(pin: PinnedRevision | None, history: History | None, problems: list[str],
              hub_tags: dict[str, str] | None = None) -> tuple[list[Check], Release | None]:
    """Does the requested revision agree with releases.json at that revision? Returns the
    checks and the release the commit holds (whose calibration its data must follow).

    ``hub_tags`` (``{tag: sha}`` from the Hub) lets a revision given by sha or branch be
    compared with the tag of the release it holds (a difference is reported, not failed).
    """
    checks: list[Check] = []
    if history is None:
        checks.append(Check("releases-json", False, "the revision carries its release history",
                            expected=f"{RELEASES_JSON} (schema rcp-data.releases/1)",
                            found="missing", where=RELEASES_JSON))
        return checks, None
    checks.append(Check(
        "releases-json", not problems, "the release history at this revision is consistent",
        expected="valid rcp-data.releases/1", found="; ".join(problems) or
        f"{len(history.releases)} release(s)", where=RELEASES_JSON, details=problems))
    sha = pin.sha if pin else None
    if pin is not None and pin.is_tag:
        rel = history.by_tag(pin.requested)
        what = f"tag {pin.requested} names the commit releases.json gives that release"
        if rel is None:
            checks.append(Check(
                "tag", False, what, expected=f"a release tagged {pin.requested}",
                found=f"releases.json at {pin.sha} names no such release (tags: "
                      f"{', '.join(r.tag for r in history.releases)})",
                where=f"{RELEASES_JSON} @ {pin.sha}"))
            return checks, held_release(history, sha)
        latest = history.latest
        if rel.revision is None and latest is not None and rel.release != latest.release:
            checks.append(Check(
                "tag", False, what, expected=f"a sha for release {rel.release} (only the "
                f"latest release, {latest.release}, can be revision null)",
                found=f"tag {pin.requested} points at {pin.sha}, whose releases.json gives "
                      f"release {rel.release} revision null",
                where=f"{RELEASES_JSON} @ {pin.sha}",
                details=[f"tag {pin.requested} may have been moved onto a later release's "
                         "commit: an older release's sha is always written"]))
        elif rel.revision is None:
            checks.append(Check(
                "tag", True, what, expected="the commit holding releases.json (revision null)",
                found=f"release {rel.release} is revision null at {pin.sha}",
                where=f"{RELEASES_JSON} @ {pin.sha}"))
        elif same_commit(rel.revision, pin.sha):
            checks.append(Check("tag", True, what, expected=rel.revision, found=pin.sha,
                                where=f"{RELEASES_JSON} @ {pin.sha}"))
        else:
            checks.append(Check(
                "tag", False, what, expected=f"{rel.revision} (release {rel.release} in "
                                             "releases.json at that revision)",
                found=f"tag {pin.requested} points at {pin.sha}",
                where=f"{RELEASES_JSON} @ {pin.sha}",
                details=[f"the tag no longer matches releases.json: tag {pin.requested} was "
                         f"moved or points at another commit (releases.json names "
                         f"{rel.revision})"]))
        return checks, held_release(history, sha)
    rel = held_release(history, sha)
    if rel is not None:
        how = "revision null" if rel.revision is None else f"revision {rel.revision}"
        tagged = (hub_tags or {}).get(rel.tag)
        expected = sha if rel.revision is None else rel.revision
        differs = bool(sha and tagged and expected and not same_commit(tagged, expected))
        checks.append(Check(
            "revision", True, "the release this revision holds",
            expected=f"the Hub's tag {rel.tag} on {expected}" if differs else "",
            found=f"release {rel.release} ({rel.tag}, {how}, {rel.status})"
                  + (f"; the Hub's tag {rel.tag} points at {tagged}" if differs else ""),
            where=f"{RELEASES_JSON} @ {sha}" if sha else RELEASES_JSON,
            status="diff" if differs else "ok",
            details=[f"this commit is not the commit tagged {rel.tag} ({tagged}): it carries "
                     "that release's releases.json but was made after it"] if differs else []))
    return checks, rel


def project_history_release(spec: SuiteSpec, pin: PinnedRevision | None,
                            histories: Path | None = None) -> tuple[History | None,
                                                                     Release | None]:
    """For a revision without releases.json (the repos published before this project's release
    policy): the project's ``release/<suite>.json`` history of that repo and the release it
    names at this commit (by tag, revision or data revision), else ``(None, None)``."""
    from rcp_data.core.history import history_path, read_history

    path = (Path(histories) / f"{spec.name}.json") if histories else history_path(spec.name)
    if pin is None or not path.exists():
        return None, None
    history = read_history(path)
    if history.repo != pin.repo:
        return None, None
    for r in reversed(history.releases):
        if (pin.is_tag and r.tag == pin.requested) or same_commit(r.revision, pin.sha) or \
                same_commit(r.data_revision, pin.sha):
            return history, r
    return history, None


def check_pin_by_project_history(pin: PinnedRevision, history: History, release: Release | None,
                                 path: str) -> list[Check]:
    """The pin of a revision that predates releases.json, checked against the project's record."""
    checks = [Check("releases-json", True, "the revision carries its release history",
                    expected=f"{RELEASES_JSON} (schema rcp-data.releases/1)",
                    found=f"absent (published before the release policy); the project's "
                          f"history {path} is used instead", where=RELEASES_JSON,
                    status="absent")]
    what = f"{pin.requested} is a release the project's history {path} names"
    if release is None:
        checks.append(Check("tag" if pin.is_tag else "revision", False, what,
                            expected=", ".join(f"{r.tag} @ {r.revision}"
                                               for r in history.releases),
                            found=f"{pin.requested} -> {pin.sha}", where=path))
        return checks
    known = release.revision or release.data_revision
    ok = known is None or same_commit(known, pin.sha)
    checks.append(Check("tag" if pin.is_tag else "revision", ok, what,
                        expected=f"release {release.release} ({release.tag}) at "
                                 f"{known or 'an unrecorded sha'}",
                        found=f"{pin.requested} -> {pin.sha}", where=path,
                        details=[] if ok else [f"the tag no longer matches the recorded "
                                               f"release: {release.tag} is recorded at {known}"]))
    return checks


# -- the task file -------------------------------------------------------------------------------
def check_task_file(root: Path, release: Release | None) -> list[Check]:
    """``rcp_ndcg_tasks.py`` pins the release this revision holds (its sha once known, else
    its tag; the design note's literal ``_REVISION = "..."`` block)."""
    import re

    from rcp_data.core.layout import TASK_FILE

    path = Path(root) / TASK_FILE
    what = "the task file pins the release this revision holds"
    if not path.exists():
        return [Check("task-file", False, what, expected=TASK_FILE, found="missing",
                      where=TASK_FILE)]
    m = re.search(r'^_REVISION = "([^"]*)"', path.read_text(encoding="utf-8"), re.MULTILINE)
    if release is None:
        return [Check("task-file", True, what, found=m.group(1) if m else "no _REVISION",
                      where=TASK_FILE, status="skipped")]
    allowed = [release.tag] if release.revision is None else [release.revision, release.tag]
    found = m.group(1) if m else None
    ok = found is not None and (found in allowed or any(
        same_commit(found, a) and len(found) >= 7 for a in allowed if a != release.tag))
    return [Check("task-file", ok, what, expected=" or ".join(allowed),
                  found=f"_REVISION = {found!r}" if found is not None else "no _REVISION line",
                  where=TASK_FILE)]


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


def data_totals(root: Path, tables: dict) -> dict[str, int]:
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
        manifest = read_manifest(root)
    except InputError:
        manifest = {}
    changed = (((manifest.get("sources") or {}).get("corpus") or {}).get("repair")
               or {}).get("changed_vs_raw")
    if isinstance(changed, int):
        totals["repaired_passages"] = changed
    return totals


def check_card_counts(card_text: str, totals: dict[str, int]) -> list[Check]:
    """Totals the card's prose states (queries, pool pairs, injected documents, corpus size,
    repaired passages) equal the data (the repair count: the build manifest's record)."""
    import re

    from rcp_data.scoring.compare import card_body

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


# -- step 3: numbers -----------------------------------------------------------------------------
@dataclass
class Replayed:
    """Replayed tables of a release, keyed like :class:`rcp_data.scoring.compare.CellKey`."""

    per_query: dict[int, object]                  # k -> per-query DataFrame (all rules)
    tableset: object                              # compare.TableSet (kind "replay")


def replay_tables(root: Path, spec: SuiteSpec, groups: set[tuple[int, str, str]]) -> Replayed:
    """Replay ``groups`` of (k, tie rule, view) from one load of the release."""
    from rcp_data.scoring.compare import CellKey, TableSet
    from rcp_data.scoring.replay import load_release, score_queries, summarize

    data = load_release(root, spec)
    cells = {}
    per_query = {}
    for k in sorted({g[0] for g in groups}):
        rules = sorted({r for kk, r, _ in groups if kk == k})
        pq_ = score_queries(data, k=k, tie_rules=rules)
        per_query[k] = pq_
        for kk, rule, view in sorted(groups):
            if kk != k:
                continue
            for metric, table in summarize(pq_, spec, view=view, tie_rule=rule).items():
                for model in table.index:
                    for col in table.columns:
                        v = float(table.at[model, col])
                        if not np.isnan(v):
                            cells[CellKey(metric, k, rule, view, str(model), str(col))] = 100 * v
    return Replayed(per_query, TableSet("replay", "replay", spec.name, cells, 0.0))


def _cell_name(spec: SuiteSpec, row: dict) -> str:
    from rcp_data.scoring.replay import METRIC_TITLES, RULE_LETTERS

    col = "Mean" if row["column"] == "mean" else spec.column_label(row["column"])
    return (f"{METRIC_TITLES[row['metric']]}@{row['k']} rule ({RULE_LETTERS[row['tie_rule']]}), "
            f"view {row['view']}, row {spec.short_name(spec.hub_id(row['model']))}, "
            f"column {col}")


def _fmt(v: float | None) -> str:
    return "missing" if v is None else f"{v:.2f}"


def check_card_tables(card_tables, replayed, spec: SuiteSpec, expected: set) -> list[Check]:
    """Every table of the card matches the replay at one decimal; the card shows them all."""
    from rcp_data.scoring.compare import compare_tables
    from rcp_data.scoring.replay import METRIC_TITLES, RULE_LETTERS

    checks = []
    have = card_tables.groups()
    missing = sorted(expected - have)
    checks.append(Check(
        "card-tables-shown", not missing, "the card shows every replayed table (both tie "
        "rules, every view)", expected=f"{len(expected)} tables", found=f"{len(have)} tables"
        + (f", {len(missing)} missing" if missing else ""), where=CARD_FILE,
        details=[f"{METRIC_TITLES[m]}@{k} rule ({RULE_LETTERS[r]}), view {v}"
                 for m, k, r, v in missing]))
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
    from rcp_data.core.history import history_path, read_history

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


def paper_applies(spec: SuiteSpec, history: History | None, release: Release | None,
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
                reason: str) -> list[Check]:
    """The paper's numbers: a failure when they apply, else a diff for information."""
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
        pq_ = per_query[CARD_K]
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
    if not checks:
        checks.append(Check("paper-tables", True, "the paper's numbers for this suite",
                            expected=f"{key!r} in {reference}", found="absent",
                            where=str(reference), status="absent"))
    return checks


# -- the whole verification ----------------------------------------------------------------------
def default_reference() -> Path:
    return resources.provenance_dir() / "paper_values.json"


def _calibration(root: Path, release: Release | None) -> tuple[ItemParams, str, str]:
    if release is not None and release.item_params:
        return ItemParams.read(root / release.item_params), release.link, release.item_params
    cal = read_manifest(root).get("calibration") or {}
    if not cal.get("item_params"):
        found = sorted(root.glob("provenance/item_params.*.json"))
        if len(found) != 1:
            raise InputError("no item parameters: neither releases.json nor the build manifest "
                             f"names them, and provenance/ holds {len(found)} item_params files",
                             path=str(root / RELEASES_JSON))
        rel = found[0].relative_to(root).as_posix()
        log.warning("no record names the item parameters; using the only file, %s, with the "
                    "default link", rel)
        return ItemParams.read(found[0]), DEFAULT_LINK, rel
    return ItemParams.read(root / cal["item_params"]), link_name(cal), cal["item_params"]


def verify_release_dir(root: Path, *, pin: PinnedRevision | None = None,
                       reference: Path | None = None, target: str | None = None,
                       hub_tags: dict[str, str] | None = None,
                       histories: Path | None = None, link_checked: bool = False
                       ) -> VerifyReport:
    """Verify a release directory (a pinned snapshot when ``pin`` is given).

    ``link_checked``: every gain is already known to be the link of its theta (the pre-publish
    release check), so the integrity checks do not compute it again.
    """
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"release directory not found: {root}")
    checks: list[Check] = []
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    history, problems = read_release_history(root)
    spec = release_spec(root, repo=pin.repo if pin else None)
    recorded = None
    if history is None:
        recorded, recorded_release = project_history_release(spec, pin, histories)
    if recorded is not None and pin is not None:
        where = str((Path(histories) / f"{spec.name}.json") if histories else
                    f"release/{spec.name}.json")
        checks += check_pin_by_project_history(pin, recorded, recorded_release, where)
        history, release = recorded, recorded_release
    else:
        pin_checks, release = check_pin(pin, history, problems, hub_tags)
        checks += pin_checks
    if history is not None and pin is not None and history.repo != pin.repo:
        checks.append(Check(
            "releases-json-repo", True, "releases.json names the repository it is in",
            expected=pin.repo, found=history.repo, where=RELEASES_JSON, status="diff",
            details=[f"releases.json was written for {history.repo} (a copy or mirror?); its "
                     "shas are checked against this repository's tags"]))
    params, link, params_path = _calibration(root, release)
    checks += check_task_file(root, release)
    card = root / CARD_FILE
    card_text = card.read_text(encoding="utf-8") if card.exists() else None
    if card_text is None:
        checks.append(Check("card", False, "the dataset card is present",
                            expected=CARD_FILE, found="missing", where=CARD_FILE))
    seconds["pin"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    configs = card_configs(card_text) if card_text is not None else None
    integrity, tables = run_integrity(ReleaseDir(root, spec), params, link, configs,
                                      link_checked=link_checked)
    checks += [replace(c, where=f"{c.where} (item parameters {params_path}, link {link})")
               if c.name == "gains" else c for c in integrity]
    if card_text is not None and tables:
        checks += check_card_counts(card_text, data_totals(root, tables))
    seconds["integrity"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    checks += _numbers(root, spec, card_text, history, release, pin.sha if pin else None,
                       reference or default_reference(), pre_policy=recorded is not None)
    seconds["replay"] = time.perf_counter() - t0
    report = VerifyReport(
        target=target or str(root), root=root, repo=pin.repo if pin else None,
        requested=pin.requested if pin else None, sha=pin.sha if pin else None,
        suite=spec.name, release=release.release if release is not None else None,
        tag=release.tag if release is not None else None, checks=checks, seconds=seconds,
        synthetic=release_is_synthetic(root, synthetic_suite=spec.synthetic)
        or (release is not None and release.synthetic))
    log.info("verified %s: %d checks, %d failed", report.target, len(report.checks),
             len(report.failed))
    return report


def _numbers(root: Path, spec: SuiteSpec, card_text: str | None, history: History | None,
             release: Release | None, sha: str | None, reference: Path, *,
             pre_policy: bool = False) -> list[Check]:
    """Replay, card tables and the paper. ``pre_policy``: a revision published before this
    project's release policy, whose card may print no result tables (TREC-DL's does not)."""
    from rcp_data.scoring.compare import METRICS, load_tables

    checks: list[Check] = []
    groups = {(CARD_K, r, v) for r in SHOWN_TIE_RULES for v in spec.card_views}
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
        groups.add((CARD_K, spec.paper_tie_rule, spec.paper_view))
    try:
        replayed = replay_tables(root, spec, groups)
    except (InputError, UsageError) as exc:
        checks.append(Check("replay", False, "provenance-runs replay (every run scores every "
                            "candidate of every query)", expected="a complete replay",
                            found=exc.message, where="provenance-runs"))
        return checks
    n_cells = len(replayed.tableset.cells)
    checks.append(Check("replay", True, "provenance-runs replayed under "
                        f"{', '.join(sorted({r for _, r, _ in groups}))}, views "
                        f"{', '.join(sorted({v for _, _, v in groups}))}",
                        found=f"{n_cells} cells", where="provenance-runs"))
    if card_tables is not None:
        expected = {(m, CARD_K, r, v) for m in METRICS for r in SHOWN_TIE_RULES
                    for v in spec.card_views}
        checks += check_card_tables(card_tables, replayed.tableset, spec, expected)
    if spec.synthetic:
        checks.append(Check("paper-tables", True, "the paper's numbers",
                            found="not compared: a SYNTHETIC suite has no paper numbers",
                            status="skipped"))
    else:
        checks += check_paper(reference, replayed.tableset, replayed.per_query, spec, applies,
                              reason)
    return checks


def verify(*, repo: str | None = None, revision: str | None = None, path: str | Path | None = None,
           reference: str | Path | None = None, cache_dir: str | Path | None = None,
           histories: str | Path | None = None, client: HubClient | None = None
           ) -> VerifyReport:
    """Verify ``repo`` at ``revision`` (tag, branch or sha) on the Hub, or a ``path``
    (a local release directory or ``hf://datasets/OWNER/NAME@REV``).

    ``client``: the Hub (default: built from the environment); ``cache_dir``, when given,
    replaces its download cache."""
    if path is not None and (repo or revision):
        raise UsageError("give either --repo with --revision, or a PATH, not both")
    if path is not None:
        parsed = parse_hf_path(str(path))
        if parsed is None:
            return verify_release_dir(Path(path), reference=_path(reference), target=str(path))
        repo, revision = parsed
    if not repo or not revision:
        raise UsageError("give --repo OWNER/NAME with --revision REV (tag or sha), or a PATH")
    client = client or HubClient.from_env()
    if cache_dir is not None:
        client = replace(client, cache_dir=Path(cache_dir))
    pin = client.resolve(repo, revision)
    log.info("%s@%s is commit %s", repo, revision, pin.sha)
    root = client.download(repo, pin.sha)
    if client.offline:
        log.info("offline: the release is not compared with the Hub's tags")
    return verify_release_dir(root, pin=pin, reference=_path(reference),
                              target=f"{repo}@{revision}",
                              hub_tags=None if client.offline else client.tags(repo),
                              histories=_path(histories))


def _path(p: str | Path | None) -> Path | None:
    return Path(p) if p is not None else None


__all__ = ["SCHEMA", "VerifyReport", "check_card_tables", "check_paper", "check_pin",
           "held_release", "paper_applies", "read_release_history", "replay_tables", "verify",
           "verify_release_dir"]
