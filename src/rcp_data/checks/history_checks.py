"""History checks: the commits and tags behind a pinned revision, not only the tag.

From the Hub's commit list of the revision and each commit's file listing (git blob ids, LFS
sha256), for the release ``N`` the revision holds (docs/concepts, *Releases*):

- ``release-commit``: the commit that introduced release N into releases.json gives it
  ``"revision": null`` (the release is ONE commit holding data, card and history);
- ``release-tag``: the Hub's tag of release N points at that commit;
- ``releases-json-revision``: releases.json at the revision gives release N null (only on that
  very commit) or that commit's sha, and a ``data_revision`` whose data equals it;
- ``data-since-release``: every data file at the revision equals the one at that commit;
- ``later-commits``: every commit after it, up to the revision, changes only README.md, the task
  file and releases.json, or, when the release's commit has no Diagnostics, adds them (the
  pictures and ``provenance/diagnostics.json``, listed in the build manifest: ``card
  regenerate``; their numbers are recomputed by the ``diagnostics`` check);
- ``older-releases``: every older release's sha is a commit of the revision's history, the commit
  that introduced that release, and carries that release's tag on the Hub;
- ``hub-tags``: no other release tag (``v<k>-...``, k up to N) on the Hub than releases.json's;
- ``history-entries``: each release's entry equals the one its own commit wrote, except the
  fields later releases and regenerations fill in (revision, data_revision, status,
  superseded_by);
- ``record``: the project's record of the repo (the packaged ``release/<suite>.json`` and the
  user's record folder, ``--histories``, where ``publish --record-to`` writes) names, for each
  release, the sha the Hub's tag and releases.json name: a sha recorded at publish time is the
  anchor a moved tag cannot fake.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rcp_data.checks.reports import Check
from rcp_data.core.errors import InputError
from rcp_data.core.files import HUB_HOUSEKEEPING
from rcp_data.core.hub_client import CommitEntry, HubClient, RemoteFile
from rcp_data.core.io import loads_json, read_json
from rcp_data.model.history import History, ReleaseRecord, is_sha, read_history, same_commit
from rcp_data.model.layout import REGENERATED_FILES, RELEASES_JSON

log = logging.getLogger(__name__)

FILLED_LATER = ("revision", "data_revision", "status", "superseded_by", "digest")
_RELEASE_TAG = re.compile(r"^v(\d+)-")


@dataclass(frozen=True)
class HubView:
    """What the Hub says about the history of one pinned commit (cached reads).

    ``chain``: the commit and its ancestors, oldest first; ``tags``: ``{tag: sha}``;
    ``tree(sha)``: ``{path: RemoteFile}`` of a commit; ``read_releases(sha)``: the text of
    releases.json at a commit; ``read_file(path, sha)``: the bytes of a file at a commit (None
    when the commit has no such file).
    """

    repo: str
    sha: str
    tags: dict[str, str]
    chain: list[CommitEntry]
    tree: Callable[[str], Mapping[str, RemoteFile]]
    read_releases: Callable[[str], bytes]
    _histories: dict[str, History | None] = field(default_factory=dict)
    read_file: Callable[[str, str], bytes | None] | None = None

    @classmethod
    def from_client(cls, client: HubClient, repo: str, sha: str,
                    tags: dict[str, str] | None = None) -> HubView:
        trees: dict[str, Mapping[str, RemoteFile]] = {}

        def tree(commit: str) -> Mapping[str, RemoteFile]:
            if commit not in trees:
                trees[commit] = client.files(repo, commit)
            return trees[commit]

        def read_releases(commit: str) -> bytes:
            return client.download_file(repo, RELEASES_JSON, commit).read_bytes()

        def read_file(path: str, commit: str) -> bytes | None:
            if path not in tree(commit):
                return None
            return client.download_file(repo, path, commit).read_bytes()

        chain = list(reversed(client.commits(repo, sha)))
        return cls(repo, sha, tags if tags is not None else client.tags(repo), chain, tree,
                   read_releases, read_file=read_file)

    @property
    def shas(self) -> list[str]:
        return [c.sha for c in self.chain]

    def full(self, sha: str | None) -> str | None:
        """The commit of the chain an (abbreviated) sha names, else None."""
        return next((c for c in self.shas if same_commit(c, sha)), None) if sha else None

    def title(self, sha: str) -> str:
        return next((c.title for c in self.chain if c.sha == sha), "")

    def history_at(self, sha: str) -> History | None:
        """releases.json at commit ``sha`` (None when absent or unreadable there)."""
        entry = self.tree(sha).get(RELEASES_JSON)
        if entry is None:
            return None
        if entry.oid not in self._histories:
            try:
                data = loads_json(self.read_releases(sha), source=f"{RELEASES_JSON} @ {sha}")
                self._histories[entry.oid] = History.from_dict(data, source=RELEASES_JSON)
            except InputError as exc:
                log.info("releases.json at %s is unreadable: %s", sha, exc.message)
                self._histories[entry.oid] = None
        return self._histories[entry.oid]

    def introduced(self, number: int) -> str | None:
        """The first commit of the chain whose releases.json names release ``number``."""
        for c in self.chain:
            h = self.history_at(c.sha)
            if h is not None and any(r.release == number for r in h.releases):
                return c.sha
        return None


def data_files(tree: Mapping[str, RemoteFile], also: frozenset[str] = frozenset()
               ) -> dict[str, str]:
    """``{path: content id}`` of every file but the regenerated ones, the Hub's own and
    ``also``."""
    return {p: f.oid for p, f in tree.items()
            if p not in REGENERATED_FILES and p not in HUB_HOUSEKEEPING and p not in also}


def added_later(release_tree: Mapping[str, RemoteFile]) -> frozenset[str]:
    """What a commit after the release's may add or change besides the regenerated files: the
    Diagnostics and the build manifest listing them, while the release's commit has none."""
    from rcp_data.checks.anchor import LATER_FILES
    from rcp_data.documents.diagnostics_files import DIAGNOSTICS_FILE

    if DIAGNOSTICS_FILE in release_tree:
        return frozenset()
    return frozenset(LATER_FILES) - set(REGENERATED_FILES)


def tree_changes(before: Mapping[str, RemoteFile], after: Mapping[str, RemoteFile]
                 ) -> list[str]:
    """Paths added, removed or changed between two listings."""
    paths = set(before) | set(after)
    return sorted(p for p in paths if (before.get(p) and before[p].oid) !=
                  (after.get(p) and after[p].oid))


def _s(sha: str | None) -> str:
    return sha[:12] if sha else "null"


def _core(r: ReleaseRecord) -> dict:
    return {k: v for k, v in r.to_dict().items() if k not in FILLED_LATER}


def _differing(then: dict | None, now: dict) -> list[str]:
    """Keys whose values differ (every key of ``now`` when there is no earlier entry)."""
    if then is None:
        return ["the whole entry (none there)"]
    return sorted(k for k in set(then) | set(now) if then.get(k) != now.get(k))


def check_history(view: HubView, history: History, release: ReleaseRecord,
                  records: list[tuple[str, History]]) -> list[Check]:
    """Every history check of the revision ``view.sha`` holding ``release`` of ``history``."""
    n = release.release
    commit = view.introduced(n)
    where = f"commits of {view.repo} up to {_s(view.sha)}"
    if commit is None:
        return [Check.failed("release-commit", f"a commit introduced release {n} into "
                             "releases.json", "a commit of the revision's history",
                             "none found", where)]
    at_commit = view.history_at(commit)
    assert at_commit is not None
    own = next(r for r in at_commit.releases if r.release == n)
    latest = at_commit.latest
    ok = own.revision is None and latest is not None and latest.release == n
    checks = [Check(
        "release-commit", ok, f"release {n} was introduced by one commit holding its data, "
        "whose releases.json gives it revision null", expected="revision null, the latest "
        "release", found=f"commit {commit} ({view.title(commit)!r}) gives release {n} "
        f"revision {own.revision or 'null'}", where=f"{RELEASES_JSON} @ {_s(commit)}")]
    checks.append(_tag_check(view, release, commit))
    checks.append(_current_entry(view, release, commit))
    checks += _since_release(view, commit)
    checks.append(_older(view, history, n))
    checks.append(_hub_tags(view, history, n))
    checks.append(_entries(view, history, n, commit, at_commit))
    checks.append(_records(view, history, n, commit, records))
    return checks


def _tag_check(view: HubView, release: ReleaseRecord, commit: str) -> Check:
    target = view.tags.get(release.tag)
    what = f"the Hub's tag {release.tag} points at the commit that introduced release " \
           f"{release.release}"
    return Check("release-tag", target == commit, what, expected=commit,
                 found=f"tag {release.tag} -> {target}" if target else
                 f"no tag {release.tag} on the Hub", where=f"tags of {view.repo}",
                 details=[] if target == commit else [
                     f"tag {release.tag} was moved, deleted or never made: release "
                     f"{release.release} is commit {commit}"])


def _current_entry(view: HubView, release: ReleaseRecord, commit: str) -> Check:
    """releases.json at the revision names the release's own commit (or null, on it)."""
    problems = []
    if release.revision is None and view.sha != commit:
        problems.append(f"revision null means 'this commit', but this commit ({_s(view.sha)}) "
                        f"is not the release's commit {_s(commit)}")
    elif release.revision is not None and view.full(release.revision) != commit:
        problems.append(f"revision {release.revision}, but release {release.release} was "
                        f"introduced by {commit}")
    data = view.full(release.data_revision)
    if release.data_revision is not None:
        if data not in view.shas[: view.shas.index(commit) + 1]:
            problems.append(f"data_revision {release.data_revision} is not a commit at or "
                            f"before {_s(commit)}")
        elif data_files(view.tree(data)) != data_files(view.tree(commit)):
            problems.append(f"data_revision {_s(data)} holds other data than the release's "
                            f"commit {_s(commit)}")
    return Check("releases-json-revision", not problems, f"releases.json at this revision "
                 f"names release {release.release}'s own commit",
                 expected=f"revision {commit} (or null on that commit), a data_revision with "
                 "the same data", found=f"revision {release.revision or 'null'}, data_revision "
                 f"{release.data_revision or 'null'}", where=f"{RELEASES_JSON} @ {_s(view.sha)}",
                 details=problems)


def _since_release(view: HubView, commit: str) -> list[Check]:
    """Data at the revision equals the release commit's; later commits touch only the
    regenerated files."""
    also = added_later(view.tree(commit))
    at_rev, at_rel = data_files(view.tree(view.sha), also), data_files(view.tree(commit), also)
    changed = sorted(p for p in set(at_rev) | set(at_rel) if at_rev.get(p) != at_rel.get(p))
    details = [f"{p}: {'added' if p not in at_rel else 'removed' if p not in at_rev else 'changed'}"
               f" since {_s(commit)}" for p in changed]
    checks = [Check("data-since-release", not changed, "every data file at this revision "
                    "equals the one at the release's commit", expected=f"the data of {commit}",
                    found=f"{len(changed)} files differ" if changed else
                    f"{len(at_rev)} files equal", where=f"file listings @ {_s(view.sha)} and "
                    f"@ {_s(commit)}", details=details)]
    later = view.shas[view.shas.index(commit):]
    allowed = set(REGENERATED_FILES) | HUB_HOUSEKEEPING | also
    bad = []
    for before, after in zip(later, later[1:], strict=False):
        other = [p for p in tree_changes(view.tree(before), view.tree(after)) if p not in allowed]
        if other:
            bad.append(f"commit {_s(after)} ({view.title(after)!r}) changes "
                       f"{', '.join(other[:8])}" + (" …" if len(other) > 8 else ""))
    checks.append(Check(
        "later-commits", not bad, "every commit after the release's commit changes only "
        f"{', '.join(REGENERATED_FILES)}" + (" (and adds the Diagnostics the release's commit "
                                              "lacks)" if also else ""),
        expected="card regenerations only",
        found=f"{len(later) - 1} later commits, {len(bad)} change other files",
        where=f"commits {_s(commit)}..{_s(view.sha)}", details=bad))
    return checks


def _older(view: HubView, history: History, n: int) -> Check:
    """Each older release's sha: a commit of this history, that release's own, tagged."""
    problems, names = [], []
    for r in history.releases:
        if r.release >= n:
            continue
        names.append(r.tag)
        rev = r.revision
        if not is_sha(rev, full=True):
            problems.append(f"release {r.release} ({r.tag}): revision {rev!r} is not a full "
                            "commit sha")
            continue
        if rev not in view.shas:
            problems.append(f"release {r.release} ({r.tag}): {rev} is not a commit of this "
                            "revision's history")
            continue
        first = view.introduced(r.release)
        if first != rev:
            problems.append(f"release {r.release} ({r.tag}): {rev} is not the commit that "
                            f"introduced it ({first})")
        tagged = view.tags.get(r.tag)
        if tagged != rev:
            problems.append(f"release {r.release} ({r.tag}): the Hub's tag points at "
                            f"{tagged}, releases.json names {rev}")
        if r.data_revision is not None and view.full(r.data_revision) is None:
            problems.append(f"release {r.release} ({r.tag}): data_revision {r.data_revision} "
                            "is not a commit of this history")
    return Check("older-releases", not problems, "every older release's sha is a commit of "
                 "this history that introduced the release and carries its tag",
                 expected=f"{len(names)} older releases", found=f"{len(problems)} problems"
                 if problems else ", ".join(names) or "none", where=f"{RELEASES_JSON} @ "
                 f"{_s(view.sha)}", details=problems)


def _hub_tags(view: HubView, history: History, n: int) -> Check:
    """Every release tag on the Hub numbered up to N is the tag releases.json gives that
    release (no second tag for a release, no tag of a release this history lacks)."""
    problems = []
    for tag, target in sorted(view.tags.items()):
        m = _RELEASE_TAG.match(tag)
        if not m or int(m.group(1)) > n:
            continue
        number = int(m.group(1))
        named = next((r.tag for r in history.releases if r.release == number), None)
        if named != tag:
            problems.append(f"tag {tag} (-> {_s(target)}) names release {number}, which "
                            f"releases.json calls {named or 'nothing'}")
    return Check("hub-tags", not problems, f"every release tag on the Hub up to v{n} is the "
                 "tag releases.json gives that release", expected="the tags of releases.json",
                 found=f"{len(problems)} other tags" if problems else "no other tags",
                 where=f"tags of {view.repo}", details=problems)


def _entries(view: HubView, history: History, n: int, commit: str, at_commit: History
             ) -> Check:
    """Entries as their own commits wrote them (only revision, data_revision, status and
    superseded_by may be filled in later); the older ones as release N's commit wrote them."""
    problems = []
    if history.repo != at_commit.repo or history.extra != at_commit.extra:
        problems.append(f"the history's repo or extra keys differ from those at {_s(commit)}")
    for r in history.releases:
        if r.release > n:
            continue
        if r.release < n:
            then = at_commit.by_tag(r.tag)
            keys = _differing(then.to_dict() if then else None, r.to_dict())
            if keys:
                problems.append(f"release {r.release} ({r.tag}): {', '.join(keys)} differ from "
                                f"the entry at the release's commit {_s(commit)}")
                continue
        own_commit = commit if r.release == n else view.introduced(r.release)
        own = view.history_at(own_commit) if own_commit else None
        entry = next((x for x in own.releases if x.release == r.release), None) if own else None
        keys = _differing(_core(entry) if entry else None, _core(r))
        if keys:
            problems.append(f"release {r.release} ({r.tag}): {', '.join(keys)} differ from the "
                            f"entry its own commit {_s(own_commit)} wrote")
    return Check("history-entries", not problems, "each release's entry is the one its own "
                 f"commit wrote (later commits fill in only {', '.join(FILLED_LATER)})",
                 expected="unchanged entries", found=f"{len(problems)} differ" if problems else
                 f"{sum(r.release <= n for r in history.releases)} entries",
                 where=f"{RELEASES_JSON} @ {_s(view.sha)}", details=problems)


def _records(view: HubView, history: History, n: int, commit: str,
             records: list[tuple[str, History]]) -> Check:
    """The Hub's tags and releases.json against the project's record of the repo."""
    what = "the Hub's tags and releases.json name the shas the project's record holds"
    mine = [(label, h) for label, h in records if h.repo == view.repo]
    if not mine:
        return Check("record", True, what, expected=f"a record of {view.repo}",
                     found="absent: neither the packaged release/ histories nor --histories "
                     "record this repository", where="release/<suite>.json", status="absent")
    problems, compared = [], 0
    for label, record in mine:
        for rec in record.releases:
            if rec.revision is None:
                continue
            compared += 1
            tagged = view.tags.get(rec.tag)
            if not same_commit(tagged, rec.revision):
                problems.append(f"{label}: release {rec.release} ({rec.tag}) recorded at "
                                f"{rec.revision}, the Hub's tag points at {tagged}")
            if rec.release > n:
                continue
            here = history.by_tag(rec.tag)
            named = commit if rec.release == n else (here.revision if here else None)
            if here is None or not same_commit(named, rec.revision):
                problems.append(f"{label}: release {rec.release} ({rec.tag}) recorded at "
                                f"{rec.revision}, this revision's history gives {named}")
    known = any(r.release == n and r.revision is not None and history.by_tag(r.tag) is not None
                for _, record in mine for r in record.releases)
    unrecorded = [] if known or problems else [
        f"the record has no sha for release {n}: its tag is checked against the Hub's commits "
        "and releases.json only (pass the folder publish --record-to wrote as --histories)"]
    return Check("record", not problems, what, expected=", ".join(label for label, _ in mine),
                 found=f"{compared} recorded shas, {len(problems)} disagree",
                 where=", ".join(label for label, _ in mine), details=problems or unrecorded,
                 status="diff" if unrecorded else "")


def project_records(suite: str, histories: Path | None) -> list[tuple[str, History]]:
    """The project's records of a suite: the packaged ``release/<suite>.json`` and, when
    given, ``<histories>/<suite>.json`` (each that exists and reads)."""
    from rcp_data.model.history import history_path

    out = []
    candidates = [(f"release/{suite}.json", history_path(suite))]
    if histories is not None:
        candidates.append((str(Path(histories) / f"{suite}.json"),
                           Path(histories) / f"{suite}.json"))
    for label, path in candidates:
        if path.exists():
            read_json(path)  # a malformed record raises, naming the file
            out.append((label, read_history(path)))
    return out


__all__ = ["HubView", "added_later", "check_history", "data_files", "project_records", "tree_changes"]
