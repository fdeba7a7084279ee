"""The build manifest of a release (``provenance/build_manifest.json``), typed, and its content
list: every file the release holds, with its size and sha256.

:class:`BuildManifest` is the one record of what a build wrote: the suite, whether the data is
generated, the judge (:class:`JudgeRecord`) and calibration (:class:`CalibrationRecord`), the
builder inputs, the sources' facts, the tools, the parameters, the per-subset counts, the corpus
files, and the content list (:class:`~rcp_data.core.files.FileEntry` per file). It is read with
:func:`load_manifest` (None when a release has none) and written with :meth:`BuildManifest.write`.

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

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


#: The first line of what :func:`release_digest` hashes (its recipe's version).
RELEASE_DIGEST_SCHEMA = "rcp-data.release-digest/1"


def release_digest(entries: Iterable[FileEntry]) -> str:
    """The content digest of one release: the anchor ``release publish`` prints and records
    (``--record-to``, the packaged ``release/<suite>.json``) and ``verify --digest`` pins.

    ``entries``: every file of the release commit, each with its size and sha256: the files the
    build manifest lists, the manifest itself, the card (``README.md``), the task file and
    ``provenance/releases.json``. The Hub's housekeeping (``.gitattributes``) is left out,
    whatever is passed (the Hub writes it; verify checks it apart).

    The exact bytes hashed (sha256, hex digest returned):

    1. the line ``rcp-data.release-digest/1\n`` (ASCII);
    2. for each file, in the order of its path's UTF-8 bytes (Python's ``str`` order), the line
       ``'<sha256> <size> <path>\n'``: the file's sha256 as 64 lowercase hex digits, one
       space, its size in bytes in decimal, one space, its POSIX path relative to the release
       root, encoded UTF-8, and one ``\n``.

    The lines of the listed files are those of the manifest's ``files_digest``
    (:func:`content_digest`), so the digest covers the manifest's file list and every byte of
    every file of the commit. A path given twice is an :class:`InputError`.
    """
    h = hashlib.sha256(f"{RELEASE_DIGEST_SCHEMA}\n".encode("ascii"))
    seen: set[str] = set()
    for e in sorted(entries, key=lambda e: e.path):
        if e.path in HUB_HOUSEKEEPING:
            continue
        if e.path in seen:
            raise InputError(f"{e.path} is given twice to the release digest")
        seen.add(e.path)
        h.update(f"{e.sha256} {e.size} {e.path}\n".encode())
    return h.hexdigest()


def is_digest(value: object) -> bool:
    """Whether ``value`` is a release digest as written (64 lowercase hex digits)."""
    return isinstance(value, str) and bool(_SHA256.match(value))


def record_content(root: str | Path) -> BuildManifest:
    """Write the content list of ``root`` into its build manifest (atomically); return the
    manifest. Call it after the last write of a data file."""
    manifest = load_manifest(root)
    if manifest is None:
        raise InputError("no build manifest", path=str(Path(root) / BUILD_MANIFEST))
    manifest = manifest.with_content(root)
    manifest.write(root)
    return manifest


def add_content(root: str | Path, paths: Iterable[str]) -> BuildManifest:
    """Add the entries of ``paths`` (files of ``root`` written since the build) to the content
    list of ``root``'s build manifest, every other entry kept as recorded (a snapshot read
    without its corpus lists the corpus still), and write it (atomically); return it."""
    manifest = load_manifest(root)
    if manifest is None or manifest.content is None:
        raise InputError("no build manifest with a content list",
                         path=str(Path(root) / BUILD_MANIFEST))
    entries = {e.path: e for e in manifest.content[0]}
    entries.update(hash_files(root, [p for p in paths if is_listed(p)]))
    listed = sorted(entries.values(), key=lambda e: e.path)
    manifest = replace(manifest, files=tuple(listed), files_digest=content_digest(listed))
    manifest.write(root)
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
    """The build manifest of a release directory as raw JSON (empty when there is none); the
    typed record is :func:`load_manifest`."""
    path = Path(root) / BUILD_MANIFEST
    if not path.exists():
        return {}
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("the build manifest must be a JSON object", path=str(path))
    return data


# -- the typed records -------------------------------------------------------------------------
def _mapping(data: Mapping, key: str, source: str) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"'{key}' must be an object", path=source, field=key)
    return dict(value)


def _text(data: Mapping, key: str, source: str, *, default: str | None = "") -> str | None:
    value = data.get(key, default)
    if value is not None and not isinstance(value, str):
        raise InputError(f"'{key}' must be a string, got {value!r}", path=source, field=key)
    return value


@dataclass(frozen=True)
class JudgeRecord:
    """The judge whose answers a release's gains come from."""

    model: str
    revision: str | None = None
    short: str = ""

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = BUILD_MANIFEST) -> JudgeRecord:
        if not isinstance(data, Mapping):
            raise InputError("'judge' must be an object", path=source, field="judge")
        model = _text(data, "model", source)
        if not model:
            raise InputError("the judge has no 'model'", path=source, field="judge.model")
        return cls(model=model, revision=_text(data, "revision", source, default=None),
                   short=_text(data, "short", source) or "")

    def to_dict(self) -> dict:
        return {"model": self.model, "revision": self.revision, "short": self.short}


@dataclass(frozen=True)
class CalibrationRecord:
    """How a release's gains were calibrated: the item-parameter file, the gain link and the
    reading rules of the judge's answers (empty when the defaults were used)."""

    item_params: str
    link: str
    reading_rules: dict = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = BUILD_MANIFEST) -> CalibrationRecord:
        if not isinstance(data, Mapping):
            raise InputError("'calibration' must be an object", path=source, field="calibration")
        item_params = _text(data, "item_params", source)
        link = _text(data, "link", source)
        if not item_params or not link:
            raise InputError("the calibration needs 'item_params' and 'link'", path=source,
                             field="calibration")
        return cls(item_params=item_params, link=link,
                   reading_rules=_mapping(data, "reading_rules", source))

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"item_params": self.item_params, "link": self.link}
        if self.reading_rules:
            out["reading_rules"] = dict(self.reading_rules)
        return out


FIRST_STAGE_METHODS = ("bm25", "dense")   # what rcp-data computes (stages.bm25, stages.dense)


@dataclass(frozen=True)
class FirstStageRecord:
    """One fused first-stage retriever of a build (``parameters.first_stage``, in fusion
    order): ``computed`` when rcp-data ran it (by the build or ``rcp-data suite first-stage``;
    ``method`` bm25 or dense, ``model`` the dense model as the spec or ``--dense`` named it),
    else its run was given (a file of the builder inputs)."""

    retriever: str
    computed: bool = False
    method: str = ""
    model: str = ""
    generated: bool = False     # generated (SYNTHETIC builder inputs), not computed nor given

    @classmethod
    def from_dict(cls, data: object, *, source: str = BUILD_MANIFEST,
                  where: str = "parameters.first_stage") -> FirstStageRecord:
        if not isinstance(data, Mapping) or not isinstance(data.get("retriever"), str):
            raise InputError("a first-stage record must be an object with a 'retriever'",
                             path=source, field=where)
        computed = data.get("computed", False)
        if not isinstance(computed, bool):
            raise InputError(f"'computed' must be true or false, got {computed!r}", path=source,
                             field=f"{where}.computed")
        method = _text(data, "method", source) or ""
        if computed and method not in FIRST_STAGE_METHODS:
            raise InputError(f"a computed run's method must be one of {FIRST_STAGE_METHODS}, "
                             f"got {method!r}", path=source, field=f"{where}.method")
        generated = data.get("generated", False)
        if not isinstance(generated, bool) or (generated and computed):
            raise InputError(f"'generated' must be true or false, and not beside computed, got "
                             f"{generated!r}", path=source, field=f"{where}.generated")
        return cls(retriever=data["retriever"], computed=computed, method=method,
                   model=_text(data, "model", source) or "", generated=generated)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"retriever": self.retriever, "computed": self.computed}
        if self.method:
            out["method"] = self.method
        if self.model:
            out["model"] = self.model
        if self.generated:
            out["generated"] = True
        return out


def first_stage_records(raw: object, *, source: str = BUILD_MANIFEST,
                        where: str = "parameters.first_stage") -> tuple[FirstStageRecord, ...]:
    """The records of a JSON list (an absent one: none)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("must be a list of first-stage records", path=source, field=where)
    return tuple(FirstStageRecord.from_dict(r, source=source, where=f"{where}[{i}]")
                 for i, r in enumerate(raw))


JUDGE_KINDS = ("real", "simulated", "generated")     # what answered for the judge
RUN_ORIGINS = ("given", "generated", "simulated", "computed")   # how a reranker run came about


@dataclass(frozen=True)
class RunOrigin:
    """How one reranker run of a build came about: ``origin`` one of :data:`RUN_ORIGINS`
    (``computed``: with the model ``computed_with``)."""

    model: str
    origin: str = "given"
    computed_with: str = ""

    def to_dict(self) -> dict:
        return {"model": self.model, "origin": self.origin,
                **({"computed_with": self.computed_with} if self.computed_with else {})}


@dataclass(frozen=True)
class PartsProvenance:
    """``parameters.provenance``: how each part of a build came about, each on its own: the
    judge (:data:`JUDGE_KINDS`) and each reranker run (:class:`RunOrigin`); the first stage's
    are its :class:`FirstStageRecord` records. A build before this record has none (its card falls
    back to the release's one SYNTHETIC flag)."""

    judge: str
    rerankers: tuple[RunOrigin, ...] = ()

    @classmethod
    def from_dict(cls, data: object, *, source: str = BUILD_MANIFEST) -> PartsProvenance:
        where = "parameters.provenance"
        if not isinstance(data, Mapping) or data.get("judge") not in JUDGE_KINDS:
            raise InputError(f"must be an object whose 'judge' is one of {JUDGE_KINDS}",
                             path=source, field=f"{where}.judge")
        runs = data.get("rerankers") or []
        if not isinstance(runs, list):
            raise InputError("must be a list", path=source, field=f"{where}.rerankers")
        out = []
        for i, r in enumerate(runs):
            ok = (isinstance(r, Mapping) and isinstance(r.get("model"), str)
                  and r.get("origin") in RUN_ORIGINS)
            if not ok:
                raise InputError(f"a run needs a 'model' and an 'origin' of {RUN_ORIGINS}",
                                 path=source, field=f"{where}.rerankers[{i}]")
            out.append(RunOrigin(r["model"], r["origin"], str(r.get("computed_with") or "")))
        return cls(judge=data["judge"], rerankers=tuple(out))

    def to_dict(self) -> dict:
        return {"judge": self.judge, "rerankers": [r.to_dict() for r in self.rerankers]}


@dataclass(frozen=True)
class CorpusFileRecord:
    """A corpus file as the manifest records it (what a card states about a corpus that was not
    downloaded)."""

    rows: int
    columns: tuple[str, ...]


#: The keys of a build manifest, in the order they are written.
_KEYS = ("schema", "suite", "synthetic", "judge", "calibration", "inputs", "sources", "tools",
         "parameters", "subsets", "counts", "corpus_files", "recalibration", "files",
         "files_digest")


@dataclass(frozen=True)
class BuildManifest:
    """``provenance/build_manifest.json``: what a build wrote, and every file it holds."""

    suite: str
    judge: JudgeRecord
    calibration: CalibrationRecord
    synthetic: bool = False
    inputs: tuple[FileEntry, ...] = ()
    sources: dict = field(default_factory=dict, compare=False)
    tools: dict = field(default_factory=dict, compare=False)
    parameters: dict = field(default_factory=dict, compare=False)
    subsets: tuple[str, ...] = ()
    counts: dict = field(default_factory=dict, compare=False)
    corpus_files: dict[str, CorpusFileRecord] | None = None
    recalibration: dict | None = field(default=None, compare=False)
    files: tuple[FileEntry, ...] | None = None
    files_digest: str | None = None
    schema: str = MANIFEST_SCHEMA
    extra: dict = field(default_factory=dict, compare=False)

    # -- facts read from it ----------------------------------------------------------------
    @property
    def content(self) -> tuple[list[FileEntry], str] | None:
        """The content list and its digest (None when the manifest records none)."""
        if self.files is None:
            return None
        return list(self.files), str(self.files_digest)

    @property
    def tool_version(self) -> str | None:
        """The rcp-data version that built the release."""
        return self.tools.get("rcp-data")

    @property
    def first_stage(self) -> tuple[FirstStageRecord, ...]:
        """How each fused first-stage run came about (none recorded by an older build)."""
        return first_stage_records(self.parameters.get("first_stage"))

    @property
    def provenance(self) -> PartsProvenance | None:
        """How each part came about (None: a build before the record)."""
        raw = self.parameters.get("provenance")
        return None if raw is None else PartsProvenance.from_dict(raw)

    def source_fact(self, *keys: str) -> Any:
        """A nested fact of the sources (``source_fact("corpus", "repair")``), None if absent."""
        value: Any = self.sources
        for key in keys:
            if not isinstance(value, Mapping):
                return None
            value = value.get(key)
        return value

    def with_content(self, root: str | Path) -> BuildManifest:
        """This manifest with the content list of the release directory ``root``."""
        entries = release_content(root)
        return replace(self, files=tuple(entries), files_digest=content_digest(entries))

    # -- (de)serialisation -----------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: object, *, source: str = BUILD_MANIFEST) -> BuildManifest:
        """The typed manifest of its JSON; a malformed one is an :class:`InputError` naming
        ``source`` and the field."""
        if not isinstance(data, Mapping):
            raise InputError("the build manifest must be a JSON object", path=source)
        if data.get("schema") != MANIFEST_SCHEMA:
            raise InputError(f"unknown schema {data.get('schema')!r}; this rcp-data reads "
                             f"{MANIFEST_SCHEMA!r}", path=source, field="schema")
        suite = _text(data, "suite", source)
        if not suite:
            raise InputError("the build manifest names no suite", path=source, field="suite")
        synthetic = data.get("synthetic", False)
        if not isinstance(synthetic, bool):
            raise InputError(f"'synthetic' must be true or false, got {synthetic!r}",
                             path=source, field="synthetic")
        subsets = data.get("subsets") or []
        if not isinstance(subsets, list) or not all(isinstance(s, str) for s in subsets):
            raise InputError("'subsets' must be a list of names", path=source, field="subsets")
        content = recorded_content(data, source=source)
        return cls(
            schema=MANIFEST_SCHEMA, suite=suite, synthetic=synthetic,
            judge=JudgeRecord.from_dict(data.get("judge"), source=source),
            calibration=CalibrationRecord.from_dict(data.get("calibration"), source=source),
            inputs=tuple(_inputs(data.get("inputs") or [], source)),
            sources=_mapping(data, "sources", source), tools=_mapping(data, "tools", source),
            parameters=_mapping(data, "parameters", source), subsets=tuple(subsets),
            counts=_mapping(data, "counts", source),
            corpus_files=_corpus_files(data, source),
            recalibration=_mapping(data, "recalibration", source) or None,
            files=None if content is None else tuple(content[0]),
            files_digest=None if content is None else content[1],
            extra={k: v for k, v in data.items() if k not in _KEYS},
        )

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "schema": self.schema, "suite": self.suite, "synthetic": self.synthetic,
            "judge": self.judge.to_dict(), "calibration": self.calibration.to_dict(),
            "inputs": [e.to_dict() for e in self.inputs], "sources": dict(self.sources),
            "tools": dict(self.tools), "parameters": dict(self.parameters),
            "subsets": list(self.subsets), "counts": dict(self.counts),
        }
        if self.corpus_files is not None:
            out["corpus_files"] = {p: {"rows": r.rows, "columns": list(r.columns)}
                                   for p, r in self.corpus_files.items()}
        if self.recalibration is not None:
            out["recalibration"] = dict(self.recalibration)
        out.update(self.extra)
        if self.files is not None:
            out["files"] = [e.to_dict() for e in self.files]
            out["files_digest"] = self.files_digest
        return out

    def write(self, root: str | Path) -> None:
        """Write this manifest into the release directory ``root`` (atomically)."""
        write_json(self.to_dict(), Path(root) / BUILD_MANIFEST)


def _inputs(raw: object, source: str) -> list[FileEntry]:
    if not isinstance(raw, list):
        raise InputError("'inputs' must be a list of {path, size, sha256}", path=source,
                         field="inputs")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str):
            raise InputError("an input must be an object with a 'path'", path=source, row=i,
                             field="inputs")
        size, sha = item.get("size"), item.get("sha256")
        if not isinstance(size, int) or not isinstance(sha, str):
            raise InputError(f"{item['path']}: bad size or sha256", path=source, row=i,
                             field="inputs")
        out.append(FileEntry(item["path"], size, sha))
    return out


def _corpus_files(data: Mapping, source: str) -> dict[str, CorpusFileRecord] | None:
    if "corpus_files" not in data:
        return None
    raw = _mapping(data, "corpus_files", source)
    out = {}
    for path, rec in raw.items():
        ok = (isinstance(rec, Mapping) and isinstance(rec.get("rows"), int)
              and isinstance(rec.get("columns"), list))
        if not ok:
            raise InputError(f"{path}: a corpus file needs 'rows' and 'columns'", path=source,
                             field="corpus_files")
        out[path] = CorpusFileRecord(int(rec["rows"]), tuple(str(c) for c in rec["columns"]))
    return out


def load_manifest(root: str | Path) -> BuildManifest | None:
    """The typed build manifest of a release directory (None when it has none)."""
    path = Path(root) / BUILD_MANIFEST
    if not path.exists():
        return None
    return BuildManifest.from_dict(read_json(path), source=str(path))




__all__ = ["FIRST_STAGE_METHODS", "JUDGE_KINDS", "MANIFEST_SCHEMA", "RELEASE_DIGEST_SCHEMA",
           "RUN_ORIGINS", "BuildManifest", "CalibrationRecord", "add_content",
           "CorpusFileRecord", "FirstStageRecord", "JudgeRecord", "PartsProvenance", "RunOrigin",
           "content_digest", "first_stage_records", "is_digest", "is_listed", "load_manifest",
           "read_manifest", "record_content", "recorded_content", "release_content",
           "release_digest"]
