"""The bytes downloaded against the Hub's own listing of the commit, and the checkout rules.

- ``hub-listing``: every file of the revision that was downloaded is read once, for its size,
  sha256 and git blob id (``sha1(b"blob <size>\\0" + bytes)``), and must be the file the Hub
  lists for that commit: a regular file by its git blob id, an LFS file by its sha256 and
  size (the LFS oid). A file the Hub lists that was not downloaded is named; under ``--quick``
  a corpus file proven by its listed LFS sha256 is not read (:mod:`rcp_data.checks.verify`),
  and every other file still is: a listed hash never stands in for a file that was read.
  The sha256s found are handed on to the content checks (:mod:`rcp_data.checks.manifest`), so
  no file is read twice.
- ``checkout``: no file git applies to a checkout may change the bytes a ``git clone`` yields:
  a ``.gitattributes`` (at any depth) may only set the Hub's own LFS routing
  (``filter=lfs diff=lfs merge=lfs -text``) and attributes that leave the working tree's bytes
  alone (``binary``, ``-text``, ``diff``, ``merge``, ``export-ignore``, ``linguist-*``);
  ``eol``, ``text``, ``crlf``, ``working-tree-encoding``, ``ident``, another ``filter`` or a
  macro (``[attr]``) fail, naming the file and line; so does a ``.lfsconfig`` (it points
  git-lfs at another store).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rcp_data.checks.reports import Check
from rcp_data.core.files import FileEntry, Snapshot, hash_files
from rcp_data.core.hub_client import RemoteFile


@dataclass(frozen=True)
class ListingResult:
    """The listing check and what the read found (every file read, with its sha256)."""

    check: Check
    found: dict[str, FileEntry]
    blob_ids: dict[str, str] = field(default_factory=dict)   # regular files read: git blob id


def _short(oid: str | None) -> str:
    return f"{oid[:12]}…" if oid else "none"


def check_listing(root: Path, listing: Mapping[str, RemoteFile], *,
                  not_read: Iterable[str] = ()) -> ListingResult:
    """Read every file of ``listing`` under ``root`` (but ``not_read``: files proven without
    their bytes) once and compare it with the Hub's listing of the commit."""
    root = Path(root)
    skipped = set(not_read)
    wanted = [p for p in sorted(listing) if p not in skipped]
    present = [p for p in wanted if (root / p).is_file()]
    wrong = [f"{p}: listed by the Hub, not downloaded" for p in wanted if p not in set(present)]
    # an LFS file is proven by its sha256 alone; a regular file's read also gives its blob id
    snapshot = Snapshot(max_file=-1, max_total=0)   # the blob ids only, no bytes held
    found = {**hash_files(root, [p for p in present if listing[p].lfs_sha256]),
             **hash_files(root, [p for p in present if not listing[p].lfs_sha256],
                          snapshot=snapshot)}
    n_lfs = 0
    for p in present:
        got, listed = found[p], listing[p]
        blob = snapshot.git_oids.get(p)
        if listed.lfs_sha256:
            n_lfs += 1
            if (got.sha256, got.size) != (listed.lfs_sha256, listed.size):
                wrong.append(f"{p}: sha256 {_short(got.sha256)} ({got.size:,} bytes), the Hub "
                             f"lists LFS oid {_short(listed.lfs_sha256)} ({listed.size:,} "
                             "bytes)")
        elif blob is None:
            wrong.append(f"{p}: changed while it was read")
        elif (blob, got.size) != (listed.blob_id, listed.size):
            wrong.append(f"{p}: git blob id {_short(blob)} ({got.size:,} bytes), the Hub lists "
                         f"{_short(listed.blob_id)} ({listed.size:,} bytes)")
    how = f"{len(present)} read ({len(present) - n_lfs} by git blob id, {n_lfs} by LFS oid)"
    if skipped:
        how += f", {len(skipped & set(listing))} proven by their listed LFS oid, not read"
    check = Check("hub-listing", not wrong, "every downloaded file is the file the Hub lists "
                  "for this commit (git blob id of a regular file, sha256 and size of an LFS "
                  "file)", expected=f"{len(listing)} files as listed",
                  found=f"{len(wrong)} differ; {how}", where="the Hub's file listing",
                  details=sorted(wrong))
    return ListingResult(check, found, dict(snapshot.git_oids))


# -- what git applies to a checkout ---------------------------------------------------------------
CHECKOUT_FILES = (".gitattributes", ".lfsconfig")
#: Attribute tokens that leave a checkout's bytes as the blobs hold them: the Hub's LFS routing
#: (git-lfs smudges a pointer back to the object the Hub lists by its oid), diff and merge
#: drivers, export and linguist hints. Every other token (``text``, ``eol``, ``crlf``,
#: ``working-tree-encoding``, ``ident``, another ``filter``, ``!text``...) fails closed.
_KEEPS_BYTES = re.compile(r"^(filter=lfs|-text|binary|[-!]?diff(=\S+)?|[-!]?merge(=\S+)?|"
                          r"[-!]?export-ignore|[-!]?linguist-[A-Za-z-]+(=\S+)?)$")


def _byte_changing(token: str) -> bool:
    """Whether one attribute token of a ``.gitattributes`` line may change checked-out bytes."""
    return not _KEEPS_BYTES.match(token)


def gitattribute_problems(text: str, where: str) -> list[str]:
    """The lines of a ``.gitattributes`` that may make a checkout's bytes differ from the
    blobs (one message each, naming ``where`` and the line)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[attr]"):
            out.append(f"{where}, line {n}: a macro attribute ({stripped[:60]!r})")
            continue
        tokens = stripped.split()[1:]
        bad = [t for t in tokens if _byte_changing(t)]
        if bad:
            out.append(f"{where}, line {n}: {' '.join(bad)} changes the bytes a checkout "
                       f"yields ({stripped[:80]!r})")
    return out


def check_checkout(root: Path, paths: Iterable[str]) -> Check:
    """No file of the revision that git applies to a checkout changes its bytes."""
    root = Path(root)
    problems: list[str] = []
    seen = 0
    for p in sorted(paths):
        name = p.rsplit("/", 1)[-1]
        if name not in CHECKOUT_FILES:
            continue
        seen += 1
        if name == ".lfsconfig":
            problems.append(f"{p}: points git-lfs at another store than the Hub's")
            continue
        path = root / p
        if not path.is_file():
            problems.append(f"{p}: listed, not downloaded")
            continue
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{p}: not UTF-8 text")
            continue
        if "\r" in text:
            problems.append(f"{p}: carriage returns (git reads such a file differently)")
        problems += gitattribute_problems(text, p)
    return Check("checkout", not problems, "no file git applies to a checkout (.gitattributes, "
                 ".lfsconfig) changes the bytes a git clone yields", expected="the Hub's LFS "
                 "routing only", found=f"{len(problems)} problems in {seen} files" if problems
                 else f"{seen} files, LFS routing only", where=", ".join(
                     p for p in sorted(paths) if p.rsplit("/", 1)[-1] in CHECKOUT_FILES)
                 or ".gitattributes", details=problems)


__all__ = ["CHECKOUT_FILES", "ListingResult", "check_checkout", "check_listing",
           "gitattribute_problems"]
