"""The anchor: what outside the repository vouches for a verified revision.

Every other check proves that a revision agrees with itself and with what the Hub says; a
writer of the repository can make a forgery that agrees with itself. The anchor ties the
revision to something the Hub cannot forge (``anchor``):

1. a pinned digest (``verify --digest D``): the release's content digest
   (:func:`rcp_data.model.manifest.release_digest`) computed from the bytes must be ``D``;
2. a record (the packaged ``release/<suite>.json`` or ``--histories``, where ``publish
   --record-to`` writes) naming the release's commit: its ``digest``, when recorded, must be
   the digest of the bytes; a record with a commit sha and no digest (the packaged records of
   the repositories published before the release policy: the bytes published then are not
   here to hash) anchors the commit only when git recomputed the objects from the bytes
   (``--git``): a listing of that commit comes from the Hub being checked, which (or a proxy
   named by ``HF_ENDPOINT``) can serve a forged commit under the recorded sha;
3. a pinned commit (``verify --revision SHA --git``, the full 40-hex sha): git recomputed every
   object id from the bytes up to that commit and the files verified are its tree
   (:mod:`rcp_data.checks.git_objects`), so the sha the user pinned proves the content;
4. nothing: every check may pass, but verify says "consistent, not anchored" and exits 3.

The digest is of the release as its own commit holds it. Verifying a later commit (a card
regeneration), the digest is computed from this revision's data and the files a regeneration
may write (:data:`LATER_FILES`: the card, task file and releases.json, and the build manifest
and Diagnostics that ``card regenerate`` adds to a release published without them) as the
release's commit holds them (read from the Hub and hashed here; a file that commit lacks left
out): equal to the recorded digest only if this revision's data is the published data, byte for
byte. The Diagnostics a later commit adds are proven by the ``diagnostics`` check (every number
recomputed from that data) and its manifest by the content checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping

from rcp_data.checks.reports import NOT_ANCHORED, Check
from rcp_data.core.files import HUB_HOUSEKEEPING, FileEntry
from rcp_data.documents.diagnostics_files import DIAGNOSTICS_FILE
from rcp_data.documents.pictures import PICTURE_FILES
from rcp_data.model.history import History, ReleaseRecord, same_commit
from rcp_data.model.layout import BUILD_MANIFEST, REGENERATED_FILES
from rcp_data.model.manifest import release_digest

#: What a commit after the release's may write (``card regenerate``): taken from the release's
#: own commit when the digest of a later commit is computed.
LATER_FILES = (*REGENERATED_FILES, BUILD_MANIFEST, DIAGNOSTICS_FILE, *PICTURE_FILES.values())

WHAT = ("something outside the repository vouches for this revision (a pinned digest, a record, "
        "a pinned commit sha with --git)")


def entry_of(path: str, data: bytes) -> FileEntry:
    return FileEntry(path, len(data), hashlib.sha256(data).hexdigest())


def release_entries(found: Mapping[str, FileEntry], *, at_release: Iterable[FileEntry] | None
                    = None) -> list[FileEntry]:
    """The entries the release digest is taken over: the revision's files (``found``, hashed
    from the bytes), with the regenerated files replaced by those of the release's own commit
    (``at_release``) when the revision is a later commit (so are the rest of
    :data:`LATER_FILES`: those the release's commit lacks are left out)."""
    entries = {p: e for p, e in found.items() if p not in HUB_HOUSEKEEPING}
    if at_release is not None:
        entries = {p: e for p, e in entries.items() if p not in LATER_FILES}
        entries.update({e.path: e for e in at_release})
    return list(entries.values())


def digest_of_release(found: Mapping[str, FileEntry], *, sha: str | None,
                      release_commit: str | None,
                      read_at: Callable[[str, str], bytes | None] | None) -> tuple[str | None, str]:
    """The release digest (None when it cannot be computed) and what it is of, in words."""
    if sha is None:
        return release_digest(release_entries(found)), "this directory's files"
    if release_commit is None or same_commit(sha, release_commit):
        return release_digest(release_entries(found)), f"the release at commit {sha}"
    if read_at is None:
        return None, f"not computed: the release's commit {release_commit} cannot be read here"
    at_release = []
    for path in LATER_FILES:
        data = read_at(path, release_commit)
        if data is not None:
            at_release.append(entry_of(path, data))
    return (release_digest(release_entries(found, at_release=at_release)),
            f"the release as its commit {release_commit} holds it: this revision's data with "
            "that commit's card, task file, releases.json, build manifest and Diagnostics")


def check_anchor(digest: str | None, *, pinned: str | None, repo: str | None,
                 release: ReleaseRecord | None, release_commit: str | None,
                 records: list[tuple[str, History]], needed: bool,
                 pinned_commit: str | None = None,
                 objects_recomputed: bool = False) -> tuple[Check, str | None]:
    """The anchor check and the anchor, in words (None: nothing vouches for the revision).
    ``pinned_commit``: the full sha the revision was given as, its objects recomputed by git
    (``--git``); ``objects_recomputed``: git recomputed the objects of the verified revision
    (``--git`` passed), which a record's commit without a digest needs to anchor."""
    if pinned is not None:
        want = pinned.strip().lower()
        ok = digest is not None and digest == want
        return (Check("anchor", ok, WHAT, expected=f"digest {want} (--digest)",
                      found=f"digest {digest}" if digest else "no digest could be computed",
                      where="--digest", details=[] if ok else [
                          "the bytes of this revision are not the release the pinned digest "
                          "names"]),
                "the pinned digest (--digest)" if ok else None)
    problems, anchors, commit_only = [], [], []
    for label, record in records:
        if release is None or release_commit is None or record.repo != repo:
            continue
        rec = next((r for r in record.releases if r.release == release.release
                    and r.tag == release.tag), None)
        if rec is None or not same_commit(rec.revision, release_commit):
            continue   # the record check names a disagreeing sha
        if rec.digest is None and objects_recomputed:
            anchors.append((1, f"{label}: release {rec.release}'s commit {rec.revision} (no "
                               "digest recorded; git recomputed the objects of the bytes, "
                               "--git)"))
        elif rec.digest is None:
            commit_only.append(f"{label} records release {rec.release}'s commit "
                               f"{rec.revision} but no digest")
        elif rec.digest == digest:
            anchors.append((2, f"{label}: release {rec.release}'s digest and commit"))
        else:
            problems.append(f"{label}: release {rec.release} ({rec.tag}) is recorded with digest "
                            f"{rec.digest}, the bytes give {digest}")
    if problems:
        return Check.failed("anchor", WHAT, "the recorded digest", f"{len(problems)} records "
                            "disagree", ", ".join(label for label, _ in records), problems), None
    if pinned_commit is not None:
        anchor = f"the pinned commit sha {pinned_commit}, objects recomputed by git (--git)"
        return Check.passed("anchor", WHAT, anchor, "--revision, --git"), anchor
    if anchors:
        anchor = max(anchors)[1]
        return Check.passed("anchor", WHAT, anchor, "release records"), anchor
    if not needed:
        return Check("anchor", True, WHAT, found="not needed: a local directory",
                     status="skipped"), None
    found = f"none: {NOT_ANCHORED}"
    if commit_only:
        found += (f" ({'; '.join(commit_only)}: a commit without a digest anchors only when "
                  "git recomputes its objects from the bytes; verify again with --git)")
    return Check("anchor", True, WHAT, expected="--digest D, a record of this release "
                 "(--histories DIR), or --revision <full commit sha> with --git",
                 found=found, where="release/<suite>.json, --histories, --digest",
                 status="absent"), None


__all__ = ["LATER_FILES", "check_anchor", "digest_of_release", "entry_of", "release_entries"]
