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
import shutil
import tempfile
from dataclasses import asdict
from pathlib import Path

from rcp_data.core.io import atomic_write_text
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


def write_diagnostics(root: Path, spec: SuiteSpec | None = None, *,
                      labels: dict[str, str] | None = None) -> list[Path]:
    """Compute, draw and write the pictures and ``provenance/diagnostics.json`` into the
    release ``root`` (each file moved in whole at the end); returns the paths written."""
    from rcp_data.scoring.release_diagnostics import release_diagnostics

    root = Path(root)
    diag = release_diagnostics(root, spec)
    written = []
    with tempfile.TemporaryDirectory(prefix=".rcp-pictures-", dir=root) as tmp:
        drawn = release_pictures(diag, Path(tmp), labels=labels)
        for name in drawn:
            target = root / PICTURE_FILES[name]
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(Path(tmp) / PICTURE_FILES[name]), target)
            written.append(target)
    atomic_write_text(root / DIAGNOSTICS_FILE,
                      json.dumps(diagnostics_record(diag, drawn), indent=1) + "\n")
    written.append(root / DIAGNOSTICS_FILE)
    return written


def read_record(root: Path) -> dict | None:
    """The release's ``provenance/diagnostics.json`` (None when it has none)."""
    from rcp_data.core.io import read_json

    path = Path(root) / DIAGNOSTICS_FILE
    return read_json(path) if path.is_file() else None


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f}"


def _num(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def diagnostics_markdown(record: dict, *, metric_titles: dict[str, str],
                         names: dict[str, str] | None = None) -> str:
    """The card's Diagnostics section (label layer, ranking layer, pictures) from a record;
    ``names``: the systems' names as the card shows them (default: their ids)."""
    from rcp_data.scoring.release_diagnostics import SCORE_LABELS

    n = record["numbers"]
    out = ["## Diagnostics", "",
           "Computed from this release's own files (its qrels grades as the human labels); "
           "`rcp-data verify` recomputes every number and every plotted array.", "",
           f"**Label layer** (judged pool documents; AUC at grade >= {n['auc_threshold']}; "
           "ties count 1/2):", "",
           "| Score | Concordance | AUC | Spearman | Ceiling | Floor | Documents |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for score, a in n["label"].items():
        sp = a["spearman"]
        out.append(f"| {SCORE_LABELS.get(score, score)} | {_num(a['concordance'])} | "
                   f"{_num(a['auc'])} | {_num(sp['rho'])} | {_num(sp['ceiling'])} | "
                   f"{_num(sp['floor'])} | {a['documents']:,} |")
    fm = n["failure_modes"]
    boards = n["leaderboards"]
    metrics = list(boards)
    out += ["", f"**Ranking layer** (nDCG@10 %, tie rule {n['tie_rule']}; Mean over the "
            "subsets with its 95% query-bootstrap interval):", "",
            "| System | " + " | ".join(f"{metric_titles.get(m, m)}@10" for m in metrics) + " |",
            "|---|" + "---:|" * len(metrics)]
    for system in boards.get("rcp_ndcg", {}):
        cells = []
        for m in metrics:
            lo, hi = n["intervals"].get(m, {}).get(system, (None, None))
            cells.append(f"{_pct(boards[m].get(system))} [{_pct(lo)}, {_pct(hi)}]")
        out.append(f"| {(names or {}).get(system, system)} | " + " | ".join(cells) + " |")
    out.append("| Pairs separated (%) | " + " | ".join(
        _pct(n["sensitivity"].get(m)) for m in metrics) + " |")
    out += ["", f"Kendall tau-b between the RCP and qrel leaderboards: "
                f"{_num(n['kendall_rcp_qrel'])}. qrel-nDCG@10 fails on {_pct(fm['any'])}% of "
                f"{fm['queries']:,} queries (saturates {_pct(fm['saturates'])}%, floors "
                f"{_pct(fm['floors'])}%, compresses {_pct(fm['compresses'])}%).", ""]
    titles = {"gain_curve": "Gain of theta over the pool", "theta_by_grade": "Theta by grade",
              "reliability": "Reliability of the calibration",
              "leaderboards": "Leaderboards with 95% intervals"}
    for name, pic in record["pictures"].items():
        out.append(f"![{titles.get(name, name)}]({pic['path']})")
    return "\n".join(out) + "\n"


def card_section(root: Path, spec: SuiteSpec) -> str:
    """The card's Diagnostics section of the release at ``root`` ("" when it has no
    ``provenance/diagnostics.json``: ``card render`` writes it)."""
    from rcp_data.model.card_format import METRIC_TITLES

    record = read_record(root)
    if record is None:
        return ""
    systems = record["numbers"].get("leaderboards", {}).get("rcp_ndcg", {})
    return diagnostics_markdown(record, metric_titles=METRIC_TITLES,
                                names={s: spec.short_name(s) for s in systems})


__all__ = ["DIAGNOSTICS_FILE", "card_section", "SCHEMA", "diagnostics_markdown", "diagnostics_record",
           "expected_record", "read_record", "write_diagnostics"]
