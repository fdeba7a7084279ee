"""Content checks: the revision holds exactly the files its build manifest lists, byte for byte.

A release this project built lists every file (path, size, sha256) in
``provenance/build_manifest.json`` (:mod:`rcp_data.model.manifest`). Verify proves that

- the list is well formed and its digest is the digest of the list (``content-manifest``);
- the revision holds exactly the listed files: none missing, none added (``content-files``);
  only the manifest itself, the files regenerations rewrite (card, task file, releases.json)
  and the Hub's ``.gitattributes`` are outside the list;
- every listed file has the recorded size and sha256 (``content-hashes``): hashed from the
  downloaded bytes (the read :mod:`rcp_data.checks.listing` made, against the Hub's listing);
  only a file that was not downloaded (``--quick``'s corpus) is proven by the sha256 the Hub
  lists for it: a listed hash never stands in for a file that was read.

A revision without a build manifest (published before the release policy) has no list: the
checks are reported absent, unless the revision carries ``provenance/releases.json`` (a
release this project built), whose manifest is required: a deleted manifest fails. A build
manifest without a list fails: every release this project builds carries one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rcp_data.checks.reports import Check
from rcp_data.core.files import FileEntry, hash_files, release_paths
from rcp_data.model.layout import BUILD_MANIFEST
from rcp_data.model.manifest import BuildManifest, content_digest, is_listed


@dataclass(frozen=True)
class HostedFile:
    """What is known about a file of the revision without reading it: its size and, for a file
    stored through LFS, the sha256 the Hub lists."""

    path: str
    size: int
    lfs_sha256: str | None = None


@dataclass(frozen=True)
class ContentResult:
    """The content checks and how the files were proven (for the report's timings)."""

    checks: list[Check]
    hashed_bytes: int = 0
    by_lfs: int = 0


def _short(sha: str) -> str:
    return sha[:12]


def check_content(root: Path, manifest: BuildManifest | None, *,
                  unreadable: str | None = None,
                  hosted: Mapping[str, HostedFile] | None = None,
                  not_read: frozenset[str] = frozenset(),
                  hashed: Mapping[str, FileEntry] | None = None,
                  required: bool = False) -> ContentResult:
    """The content checks of a release directory ``root``.

    ``manifest``: the build manifest (None: the revision has none, or, with ``unreadable``
    saying why, it holds one that does not read: a failed check). ``hosted``: the Hub's
    listing of the revision (``None`` for a local directory: the directory's own files are
    the revision). ``not_read``: files not downloaded, proven by the LFS sha256 the Hub lists
    for them (every other file is hashed). ``hashed``: files of ``root`` the caller has just
    hashed (:func:`hash_files`), not read again. ``required``: the revision carries
    releases.json, so a missing manifest fails.
    """
    root = Path(root)
    what_list = "the build manifest lists every file of the release with a digest over the list"
    if unreadable is not None:
        return ContentResult([Check.failed("content-manifest", what_list,
                                           "a well-formed build manifest", unreadable,
                                           BUILD_MANIFEST)])
    if manifest is None and required:
        return ContentResult([Check.failed(
            "content-manifest", what_list, f"{BUILD_MANIFEST} (a revision carrying "
            "provenance/releases.json is a release this project built, and every such release "
            "carries its manifest)", "missing: the files are not proven byte for byte",
            BUILD_MANIFEST)])
    if manifest is None:
        return ContentResult([Check(
            "content-manifest", True, what_list, expected=f"{BUILD_MANIFEST} with 'files'",
            found="absent: no build manifest (a revision published before the release "
                  "policy); the files are not proven byte for byte", where=BUILD_MANIFEST,
            status="absent")])
    recorded = manifest.content
    if recorded is None:
        return ContentResult([Check.failed(
            "content-manifest", what_list, "'files' and 'files_digest' (every release this "
            "project builds records them)", "no 'files' list", BUILD_MANIFEST)])
    entries, digest = recorded
    actual_digest = content_digest(entries)
    checks = [Check("content-manifest", actual_digest == digest, what_list,
                    expected=f"files_digest {digest}", found=f"{len(entries)} files, digest "
                    f"{actual_digest}", where=BUILD_MANIFEST,
                    details=[] if actual_digest == digest else [
                        "the digest is not the digest of the listed files: the list was edited "
                        "after it was recorded"])]
    present = sorted(hosted) if hosted is not None else release_paths(root)
    listed = {e.path: e for e in entries}
    extra = [p for p in present if is_listed(p) and p not in listed]
    have = set(present)
    missing = [p for p in listed if p not in have]
    details = [f"{p}: in the revision, not in the manifest" for p in extra]
    details += [f"{p}: in the manifest, not in the revision" for p in missing]
    checks.append(Check(
        "content-files", not details, "the revision holds exactly the files the manifest lists "
        "(besides the manifest, README.md, the task file, releases.json and .gitattributes)",
        expected=f"{len(listed)} listed files", found=f"{len(extra)} extra, {len(missing)} "
        "missing", where=BUILD_MANIFEST, details=details))
    result = _hashes(root, [e for e in entries if e.path in have], hosted, not_read,
                     hashed or {})
    checks.append(result.checks[0])
    return ContentResult(checks, result.hashed_bytes, result.by_lfs)


def _hashes(root: Path, entries: list[FileEntry], hosted: Mapping[str, HostedFile] | None,
            not_read: frozenset[str], hashed: Mapping[str, FileEntry]) -> ContentResult:
    """Size and sha256 of every listed file against the manifest (the files not in
    ``hashed`` are hashed now, on every core)."""
    wrong: list[str] = []
    n_hashed = by_lfs = 0
    to_hash: list[FileEntry] = []
    for e in entries:
        info = hosted.get(e.path) if hosted is not None else None
        if e.path in not_read and info is not None and info.lfs_sha256:
            by_lfs += 1
            _compare(e, info.size, info.lfs_sha256, "the Hub's LFS sha256", wrong)
        elif not (root / e.path).is_file():
            wrong.append(f"{e.path}: listed by the Hub but not downloaded")
        else:
            to_hash.append(e)
    found = {**hashed, **hash_files(root, [e.path for e in to_hash if e.path not in hashed])}
    for e in to_hash:
        got = found[e.path]
        n_hashed += got.size
        _compare(e, got.size, got.sha256, "sha256", wrong)
    how = (f"{len(entries) - by_lfs} hashed ({n_hashed:,} bytes), {by_lfs} by the Hub's LFS "
           "sha256" if by_lfs else f"{len(entries)} hashed ({n_hashed:,} bytes)")
    check = Check("content-hashes", not wrong, "every listed file has the size and sha256 the "
                  "manifest records", expected=f"{len(entries)} files as recorded",
                  found=f"{len(wrong)} differ; {how}", where=BUILD_MANIFEST,
                  details=sorted(wrong))
    return ContentResult([check], n_hashed, by_lfs)


def _compare(e: FileEntry, size: int, sha: str, how: str, wrong: list[str]) -> None:
    if (size, sha) != (e.size, e.sha256):
        wrong.append(f"{e.path}: {how} {_short(sha)}… ({size:,} bytes), the manifest "
                     f"records {_short(e.sha256)}… ({e.size:,} bytes)")


__all__ = ["ContentResult", "HostedFile", "check_content"]
