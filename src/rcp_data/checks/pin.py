"""The pin: does the requested revision agree with the release history it carries?

A tag or branch is resolved to its commit sha; a tag must agree with
``provenance/releases.json`` *at that revision*: the release the commit holds has
``"revision": null``, every other release names its sha. A tag moved onto another commit
(e.g. ``v1`` moved onto the ``v2`` commit, whose releases.json names v1's real sha) fails.
A revision published before the release policy (no releases.json) is checked against the
project's record instead. The Hub's commits behind the pin are checked by
:mod:`rcp_data.checks.history_checks`.
"""

from __future__ import annotations

import re
from pathlib import Path

from rcp_data.checks.reports import Check
from rcp_data.core.hub_client import PinnedRevision
from rcp_data.core.io import read_json
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.history import (
    History,
    ReleaseRecord,
    history_path,
    read_history,
    same_commit,
    validate_history,
)
from rcp_data.model.layout import RELEASES_JSON, TASK_FILE


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
    # every older release's sha is always written (docs/concepts, Releases)
    problems += [f"release {r.release} ({r.tag}): an older release names its sha in "
                 "'revision', got null" for r in history.releases[:-1] if r.revision is None]
    return history, problems


def held_release(history: History, sha: str | None) -> ReleaseRecord | None:
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
              hub_tags: dict[str, str] | None = None) -> tuple[list[Check], ReleaseRecord | None]:
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
                                                                     ReleaseRecord | None]:
    """For a revision without releases.json (the repos published before this project's release
    policy): the project's ``release/<suite>.json`` history of that repo and the release it
    names at this commit (by tag, revision or data revision), else ``(None, None)``."""
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


def check_pin_by_project_history(pin: PinnedRevision, history: History, release: ReleaseRecord | None,
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
def check_task_file(root: Path, release: ReleaseRecord | None) -> list[Check]:
    """``rcp_ndcg_tasks.py`` pins the release this revision holds (its sha once known, else
    its tag; the docs/concepts's literal ``_REVISION = "..."`` block)."""
    path = Path(root) / TASK_FILE
    what = "the task file pins the release this revision holds"
    if not path.exists():
        return [Check("task-file", False, what, expected=TASK_FILE, found="missing",
                      where=TASK_FILE)]
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return [Check("task-file", False, what, expected="UTF-8 Python source",
                      found=f"not UTF-8 text ({exc.reason} at byte {exc.start})",
                      where=TASK_FILE)]
    m = re.search(r'^_REVISION = "([^"]*)"', text, re.MULTILINE)
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


__all__ = ["check_pin", "check_pin_by_project_history", "check_task_file", "held_release",
           "project_history_release", "read_release_history"]
