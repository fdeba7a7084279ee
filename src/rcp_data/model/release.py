"""A release directory opened once: its root, its suite's spec, its manifest and tables."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from rcp_data.core.errors import InputError
from rcp_data.core.io import read_json
from rcp_data.core.specs import SuiteSpec
from rcp_data.model.layout import (
    BUILD_MANIFEST,
    RELEASES_JSON,
    CorpusFile,
    corpus_files,
    provenance_file,
    subset_file,
)
from rcp_data.model.manifest import read_manifest
from rcp_data.model.tables import read_table

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Release:
    """A release directory in the published layout."""

    root: Path
    spec: SuiteSpec

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

    def manifest(self) -> dict:
        return read_manifest(self.root)



def release_is_synthetic(root: str | Path, *, synthetic_suite: bool = False) -> bool:
    """Whether a release directory holds generated data: a synthetic suite, its build manifest's
    ``"synthetic": true``, or its releases.json marking the release it holds synthetic."""
    if synthetic_suite:
        return True
    with contextlib.suppress(InputError):
        if read_manifest(root).get("synthetic") is True:
            return True
    path = Path(root) / RELEASES_JSON
    if path.exists():
        with contextlib.suppress(InputError, AttributeError):
            releases = read_json(path).get("releases") or []
            latest = releases[-1] if releases else {}
            return isinstance(latest, dict) and latest.get("synthetic") is True
    return False



def corpus_file_facts(root: Path, spec: SuiteSpec, subset: str) -> list[CorpusFile]:
    """The corpus files of a subset: from their parquet footers when the files are here, else
    from the build manifest's ``corpus_files`` (a snapshot downloaded without its corpus)."""
    root = Path(root)
    group = spec.corpus_group(subset)
    single = subset_file(subset, "corpus")
    here = (root / single).exists() if group is None else \
        any((root / "corpus" / group).glob("corpus-*.parquet"))
    if here:
        return [CorpusFile(rel, meta.num_rows, tuple(meta.schema.to_arrow_schema().names))
                for rel in corpus_files(root, spec, subset)
                for meta in [pq.read_metadata(root / rel)]]
    recorded = read_manifest(root).get("corpus_files") or {}
    mine = sorted(p for p in recorded if (p == single if group is None
                                          else p.startswith(f"corpus/{group}/corpus-")))
    if not mine:
        where = single if group is None else f"corpus/{group}/"
        raise InputError(f"no corpus for subset {subset!r}: neither {where} nor a record of it "
                         f"in {BUILD_MANIFEST}", path=str(root / where))
    return [CorpusFile(p, int(recorded[p]["rows"]), tuple(recorded[p]["columns"])) for p in mine]


