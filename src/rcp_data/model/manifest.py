"""The content manifest of a release: every file it holds, with its size and sha256.

A release this project builds lists, in ``provenance/build_manifest.json``, every file of the
release except the manifest itself and the files a later card regeneration may change
(:data:`REGENERATED_FILES`: the card, releases.json and the task file), plus one digest over
that list:

```
"files": [{"path": "alpha/corpus.parquet", "size": 1234, "sha256": "<64 hex>"}, ...],
"files_digest": "<sha256 of the lines '<sha256> <size> <path>\\n', in path order>"
```

Every writer of a release directory (the build, a recalibration, the demo) calls
:func:`record_content` after its last data write; ``rcp-data verify`` proves a revision holds
exactly these files with these hashes. A file is named by its POSIX path relative to the
release root; hidden files and ``__pycache__`` are never part of a release, and the Hub's own
``.gitattributes`` (:data:`HUB_HOUSEKEEPING`) is neither listed nor an extra file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.files import HUB_HOUSEKEEPING, FileEntry, hash_files, release_paths
from rcp_data.core.io import read_json, write_json
from rcp_data.model.layout import BUILD_MANIFEST, MANIFEST_SCHEMA, UNLISTED_FILES

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def is_listed(path: str) -> bool:
    """Whether the content manifest lists ``path`` (every file but the unlisted ones and the
    Hub's housekeeping)."""
    return path not in UNLISTED_FILES and path not in HUB_HOUSEKEEPING


def release_content(root: str | Path) -> list[FileEntry]:
    """The entries of every listed file of a release directory, in path order."""
    root = Path(root)
    return list(hash_files(root, [rel for rel in release_paths(root) if is_listed(rel)]).values())


def content_digest(entries: Iterable[FileEntry]) -> str:
    """sha256 over the lines ``'<sha256> <size> <path>\\n'`` of ``entries`` in path order."""
    h = hashlib.sha256()
    for e in sorted(entries, key=lambda e: e.path):
        h.update(f"{e.sha256} {e.size} {e.path}\n".encode())
    return h.hexdigest()


def content_fields(root: str | Path) -> dict:
    """``{"files": [...], "files_digest": ...}`` of a release directory, for its manifest."""
    entries = release_content(root)
    return {"files": [e.to_dict() for e in entries], "files_digest": content_digest(entries)}


def record_content(root: str | Path) -> dict:
    """Write the content manifest of ``root`` into its build manifest (atomically); return the
    manifest. Call it after the last write of a data file."""
    path = Path(root) / BUILD_MANIFEST
    manifest = read_json(path)
    if not isinstance(manifest, dict):
        raise InputError("the build manifest must be a JSON object", path=str(path))
    manifest.update(content_fields(root))
    write_json(manifest, path)
    return manifest


def recorded_content(manifest: Mapping, *, source: str = BUILD_MANIFEST
                     ) -> tuple[list[FileEntry], str] | None:
    """The files and digest a build manifest records (None when it records none).

    A malformed list (an entry without a path, size or 64-hex sha256, a path given twice, an
    unlisted file listed) is an :class:`InputError` naming the manifest and the entry.
    """
    if "files" not in manifest and "files_digest" not in manifest:
        return None
    files, digest = manifest.get("files"), manifest.get("files_digest")
    if not isinstance(files, list):
        raise InputError("'files' must be a list of {path, size, sha256}", path=source,
                         field="files")
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise InputError(f"'files_digest' must be a 64-hex sha256, got {digest!r}", path=source,
                         field="files_digest")
    entries, seen = [], set()
    for i, item in enumerate(files):
        if not isinstance(item, Mapping):
            raise InputError("a 'files' entry must be an object", path=source, row=i)
        p, size, sha = item.get("path"), item.get("size"), item.get("sha256")
        if not isinstance(p, str) or not p or p.startswith("/") or ".." in p.split("/"):
            raise InputError(f"bad path {p!r}", path=source, row=i, field="path")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise InputError(f"{p}: bad size {size!r}", path=source, row=i, field="size")
        if not isinstance(sha, str) or not _SHA256.match(sha):
            raise InputError(f"{p}: bad sha256 {sha!r}", path=source, row=i, field="sha256")
        if p in seen:
            raise InputError(f"{p} is listed twice", path=source, row=i, field="path")
        if not is_listed(p):
            raise InputError(f"{p} may not be listed (the manifest itself, a regenerated file "
                             "or the Hub's housekeeping)", path=source, row=i, field="path")
        seen.add(p)
        entries.append(FileEntry(p, size, sha))
    return entries, digest


def read_manifest(root: str | Path) -> dict:
    """The build manifest of a release directory (empty when there is none)."""
    path = Path(root) / BUILD_MANIFEST
    if not path.exists():
        return {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("the build manifest must be a JSON object", path=str(path))
    return data




__all__ = ["MANIFEST_SCHEMA", "content_digest", "content_fields", "is_listed", "read_manifest",
           "record_content", "recorded_content", "release_content"]
