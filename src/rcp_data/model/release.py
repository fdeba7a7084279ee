"""A release opened once: :func:`open_release` takes a release directory or an
``hf://datasets/OWNER/NAME@REV`` revision and returns the :class:`Release` that travels through
every command (its root, its suite's spec, its typed build manifest and history, and where it
came from)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.errors import InputError
from rcp_data.core.hub_client import HubClient, PinnedRevision, missing_release_dir, parse_hf_path
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.history import History, read_history
from rcp_data.model.layout import (
    BUILD_MANIFEST,
    RELEASES_JSON,
    CorpusFile,
    corpus_files,
    provenance_file,
    subset_file,
)
from rcp_data.model.manifest import BuildManifest, load_manifest
from rcp_data.model.suite import suite_spec
from rcp_data.model.tables import read_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, eq=False)
class Release:
    """A release directory in the published layout, read with its suite's spec.

    ``known`` says whether the suite is a known one (an unknown suite's release is read with an
    ad-hoc spec of its folders); ``ref`` is what the user named (a path or an ``hf://`` path);
    ``pin`` the Hub revision it was downloaded from (None for a local directory).
    """

    root: Path
    spec: SuiteSpec
    known: bool = True
    ref: str = ""
    pin: PinnedRevision | None = None

    # -- where it came from ----------------------------------------------------------------
    @property
    def repo(self) -> str | None:
        return self.pin.repo if self.pin else None

    @property
    def revision(self) -> str | None:
        """The commit sha it was downloaded at (None for a local directory)."""
        return self.pin.sha if self.pin else None

    # -- its records -----------------------------------------------------------------------
    @cached_property
    def manifest(self) -> BuildManifest | None:
        """The typed build manifest (None for a release without one)."""
        return load_manifest(self.root)

    @cached_property
    def history(self) -> History | None:
        """The release history it carries (``provenance/releases.json``), None without one."""
        path = self.root / RELEASES_JSON
        return read_history(path) if path.exists() else None

    @property
    def synthetic(self) -> bool:
        """Whether it holds generated data (:func:`release_is_synthetic`)."""
        return release_is_synthetic(self.root, synthetic_suite=self.spec.synthetic)

    # -- its tables ------------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        return self.root / rel

    def table(self, subset: str, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
        if kind == "corpus":
            import pandas as pd

            frames = [read_table(self.root, f, "corpus", columns)
                      for f in corpus_files(self.root, self.spec, subset)]
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        return read_table(self.root, subset_file(subset, kind), kind, columns)

    def has(self, subset: str, kind: str) -> bool:
        return (self.root / subset_file(subset, kind)).exists()

    def provenance(self, kind: str, split: str, columns: list[str] | None = None) -> pd.DataFrame:
        return read_table(self.root, provenance_file(kind, split), kind, columns)

    def has_provenance(self, kind: str, split: str) -> bool:
        return (self.root / provenance_file(kind, split)).exists()

    def corpus_file_facts(self, subset: str) -> list[CorpusFile]:
        return corpus_file_facts(self.root, self.spec, subset)


def open_release(ref: str | Path | Release, *, suite: SuiteSpec | str | None = None,
                 client: HubClient | None = None, allow_patterns: Sequence[str] | None = None,
                 ignore_patterns: Sequence[str] | None = None, adhoc: bool = False,
                 hint: str = "", pin: PinnedRevision | None = None) -> Release:
    """Open a release: a release directory, or ``hf://datasets/OWNER/NAME@REV`` (the revision
    resolved to its commit sha and the files matching the patterns, default all, downloaded by
    that sha into the Hugging Face cache through ``client``, default one from the environment).

    The suite is ``suite`` when given, else the one the release names
    (:func:`rcp_data.model.suite.which_suite`); with ``adhoc`` a release of no known suite is
    read with a spec of its folders, otherwise it is an :class:`InputError` (``hint`` ends the
    message). A missing directory is a :class:`NotFoundError` naming it. ``pin``: the Hub
    revision a release directory was downloaded from (by a caller that downloads it itself).
    """
    if isinstance(ref, Release):
        return ref
    parsed = parse_hf_path(str(ref))
    if parsed is None:
        root = Path(ref)
        if not root.is_dir():
            raise missing_release_dir(ref)
    else:
        client = client or HubClient.from_env()
        root, pin = client.local_release(str(ref), allow_patterns=allow_patterns,
                                         ignore_patterns=ignore_patterns)
    spec, known = suite_spec(root, suite, repo=pin.repo if pin else None, hint=hint,
                             adhoc=adhoc)
    return Release(Path(root), spec, known=known, ref=str(ref), pin=pin)


def release_is_synthetic(root: str | Path, *, synthetic_suite: bool = False) -> bool:
    """Whether a release directory holds generated data: a synthetic suite, its build manifest's
    ``"synthetic": true``, or its releases.json marking the release it holds synthetic."""
    if synthetic_suite:
        return True
    with contextlib.suppress(InputError):
        manifest = load_manifest(root)
        if manifest is not None and manifest.synthetic:
            return True
    path = Path(root) / RELEASES_JSON
    if path.exists():
        with contextlib.suppress(InputError):
            latest = read_history(path).latest
            return latest is not None and latest.synthetic
    return False


def corpus_file_facts(root: Path, spec: SuiteSpec, subset: str) -> list[CorpusFile]:
    """The corpus files of a subset: from their parquet footers when the files are here, else
    from the build manifest's ``corpus_files`` (a snapshot downloaded without its corpus)."""
    import pyarrow.parquet as pq

    root = Path(root)
    group = spec.corpus_group(subset)
    single = subset_file(subset, "corpus")
    here = (root / single).exists() if group is None else \
        any((root / "corpus" / group).glob("corpus-*.parquet"))
    if here:
        return [CorpusFile(rel, meta.num_rows, tuple(meta.schema.to_arrow_schema().names))
                for rel in corpus_files(root, spec, subset)
                for meta in [pq.read_metadata(root / rel)]]
    manifest = load_manifest(root)
    recorded = (manifest.corpus_files if manifest else None) or {}
    mine = sorted(p for p in recorded if (p == single if group is None
                                          else p.startswith(f"corpus/{group}/corpus-")))
    if not mine:
        where = single if group is None else f"corpus/{group}/"
        raise InputError(f"no corpus for subset {subset!r}: neither {where} nor a record of it "
                         f"in {BUILD_MANIFEST}", path=str(root / where))
    return [CorpusFile(p, recorded[p].rows, recorded[p].columns) for p in mine]


__all__ = ["Release", "corpus_file_facts", "open_release", "release_is_synthetic"]
