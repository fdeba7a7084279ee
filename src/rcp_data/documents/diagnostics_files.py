"""The release's Diagnostics: its pictures (:mod:`.pictures`) and the numbers behind them and
behind the card's Diagnostics section, written into the release as files.

``provenance/diagnostics.json`` (schema :data:`SCHEMA`) holds ``numbers`` (every label-layer and
ranking-layer number, :meth:`~rcp_data.scoring.release_diagnostics.ReleaseDiagnostics.to_json`)
and ``pictures`` (per picture: its path, its size in pixels and the arrays it plots). The
pictures lie under ``provenance/pictures/``. Both are data files of the release: the build
manifest lists them (:func:`~rcp_data.model.manifest.record_content`), and ``verify``
recomputes every number and every plotted array (:mod:`rcp_data.checks.diagnostics_check`).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rcp_data.core.io import atomic_write_text
from rcp_data.core.outputs import own_path
from rcp_data.core.specs import SuiteSpec
from rcp_data.documents.pictures import PICTURE_FILES, SIZE, picture_data, release_pictures

DIAGNOSTICS_FILE = "provenance/diagnostics.json"
SCHEMA = "rcp-data.diagnostics/1"


def _clean(value):
    """JSON-ready: tuples as lists, NaN as None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def diagnostics_record(diag, pictures: dict) -> dict:
    """The JSON of ``provenance/diagnostics.json`` from the numbers and the plotted data."""
    return _clean({"schema": SCHEMA, "numbers": diag.to_json(),
                   "pictures": {name: {"path": PICTURE_FILES[name], "size": list(SIZE),
                                       "data": asdict(data)}
                                for name, data in pictures.items()}})


def expected_record(root: Path, spec: SuiteSpec | None = None) -> dict:
    """The record the release's data gives now (nothing drawn): what ``verify`` compares."""
    from rcp_data.scoring.release_diagnostics import release_diagnostics

    diag = release_diagnostics(root, spec)
    return diagnostics_record(diag, picture_data(diag))


def _synthetic(root: Path) -> bool:
    """Whether the release at ``root`` was built from SYNTHETIC data (its build manifest)."""
    from rcp_data.model.manifest import load_manifest

    manifest = load_manifest(root)
    return bool(manifest is not None and manifest.synthetic)


def system_names(diag, spec: SuiteSpec) -> dict[str, str]:
    """The systems of the leaderboards as the card's tables name them (the spec's short
    names; an unmapped system by its id)."""
    return {s: spec.short_name(s) for s in diag.leaderboards.get("rcp_ndcg", {})}


def write_diagnostics(root: Path, spec: SuiteSpec | None = None, *,
                      labels: dict[str, str] | None = None,
                      synthetic: bool | None = None) -> list[Path]:
    """Compute, draw and write the pictures and ``provenance/diagnostics.json`` into the
    release ``root`` (each file moved in whole at the end); returns the paths written.

    The systems are named as the card's tables name them (the spec's short names) unless
    ``labels`` says otherwise; ``synthetic`` (default: the build manifest's flag) marks every
    picture SYNTHETIC."""
    from rcp_data.model.suite import suite_spec
    from rcp_data.scoring.release_diagnostics import release_diagnostics

    root = Path(root)
    diag = release_diagnostics(root, spec)
    names = system_names(diag, suite_spec(root, spec, adhoc=True)[0])
    synthetic = _synthetic(root) if synthetic is None else synthetic
    written = []
    with tempfile.TemporaryDirectory(prefix=".rcp-pictures-", dir=root) as tmp:
        drawn = release_pictures(diag, Path(tmp), labels={**names, **(labels or {})},
                                 synthetic=synthetic)
        for name in drawn:   # a symbolic link on the way is replaced, never written through
            target = own_path(root, PICTURE_FILES[name])
            os.replace(Path(tmp) / PICTURE_FILES[name], target)
            written.append(target)
    atomic_write_text(own_path(root, DIAGNOSTICS_FILE),
                      json.dumps(diagnostics_record(diag, drawn), indent=1) + "\n")
    written.append(root / DIAGNOSTICS_FILE)
    return written


def read_record(root: Path) -> dict | None:
    """The release's ``provenance/diagnostics.json`` (None when it has none)."""
    from rcp_data.core.io import read_json

    path = Path(root) / DIAGNOSTICS_FILE
    return read_json(path) if path.is_file() else None


@dataclass(frozen=True)
class DiagnosticsCard:
    """What the card's Diagnostics section shows (its sentences are the template's macro
    ``diagnostics`` in ``card_prose.md.j2``): the record's numbers and pictures, the metrics'
    and scores' titles, and the systems' names as the card shows them."""

    numbers: dict
    pictures: dict
    metric_titles: dict[str, str]
    score_labels: dict[str, str]
    names: dict[str, str] = field(default_factory=dict)
    #: the rows the label layer counts (the exclusion rule of every agreement figure)
    label_rule: str = ""
    k: int = 10                      # the ranking layer's cutoff: the card's main k


def diagnostics_card(record: dict, *, metric_titles: dict[str, str],
                     names: dict[str, str] | None = None, k: int = 10) -> DiagnosticsCard:
    """The Diagnostics section's facts from a record; ``names``: the systems' names as the
    card shows them (default: their ids); ``k``: the ranking layer's cutoff (the spec's
    ``main_k``)."""
    from rcp_data.scoring.release_diagnostics import LABEL_RULE, SCORE_LABELS

    return DiagnosticsCard(record["numbers"], record["pictures"], dict(metric_titles),
                           dict(SCORE_LABELS), dict(names or {}), LABEL_RULE, k)


def card_section(root: Path, spec: SuiteSpec) -> DiagnosticsCard | None:
    """The card's Diagnostics facts of the release at ``root`` (None when it has no
    ``provenance/diagnostics.json``: ``build`` and ``card render`` write it)."""
    from rcp_data.model.card_format import METRIC_TITLES

    record = read_record(root)
    if record is None:
        return None
    systems = record["numbers"].get("leaderboards", {}).get("rcp_ndcg", {})
    return diagnostics_card(record, metric_titles=METRIC_TITLES,
                            names={s: spec.short_name(s) for s in systems}, k=spec.main_k)


__all__ = ["DIAGNOSTICS_FILE", "SCHEMA", "DiagnosticsCard", "card_section", "diagnostics_card",
           "diagnostics_record", "expected_record", "read_record", "system_names",
           "write_diagnostics"]
