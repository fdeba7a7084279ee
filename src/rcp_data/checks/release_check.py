"""Pre-publish checks of a release directory.

Nothing is uploaded unless these pass: every file the layout and the suite spec require is
there, every card config points at files that exist, every table has its columns, every
``gain`` equals the link of its ``theta`` (within 1e-12) under the item parameters that
``provenance/releases.json`` names, and releases.json is consistent.
"""

from __future__ import annotations

import glob
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.core import layout
from rcp_data.core.errors import InputError, RcpDataError, RefusedError, UsageError
from rcp_data.core.gains import ItemParams, gain
from rcp_data.core.history import History, read_history, release_tag
from rcp_data.core.specs import SuiteSpec, load_spec

log = logging.getLogger(__name__)

GAIN_TOLERANCE = 1e-12
MAX_ROWS_SHOWN = 3


@dataclass
class CheckReport:
    """What the checks found in one release directory."""

    root: Path
    suite: str | None = None
    history: History | None = None
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    qrels_rows: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_failed(self) -> None:
        if self.problems:
            shown = "\n  - ".join(self.problems)
            raise RefusedError(f"release check of {self.root} failed "
                               f"({len(self.problems)} problem(s)); nothing was uploaded:\n"
                               f"  - {shown}")


def release_files(root: Path) -> list[str]:
    """Relative POSIX paths of every file a release uploads (hidden files and caches skipped)."""
    out = []
    for p in sorted(Path(root).rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(root)
        hidden = any(part.startswith(".") or part == "__pycache__" for part in rel.parts)
        if hidden and rel.as_posix() != ".gitattributes":
            continue
        out.append(rel.as_posix())
    return out


def required_files(root: Path, spec: SuiteSpec, history: History | None) -> list[str]:
    """Files the layout requires of a release of ``spec`` (corpus shards as found)."""
    req = [layout.CARD_FILE, layout.TASK_FILE, layout.RELEASES_JSON, layout.BUILD_MANIFEST]
    for sub in spec.subsets:
        try:
            req += layout.corpus_files(root, spec, sub.name)
        except InputError:
            req.append(layout.corpus_pattern(spec, sub.name))
        for kind in ("queries", "qrels", "top_ranked"):
            req.append(layout.subset_file(sub.name, kind))
        if sub.excludes:
            req.append(layout.subset_file(sub.name, "excluded"))
    for split in spec.provenance_splits:
        for kind in layout.PROVENANCE_KINDS:
            req.append(layout.provenance_file(kind, split))
    if history is not None and history.latest is not None and history.latest.item_params:
        req.append(history.latest.item_params)
    return list(dict.fromkeys(req))


def _card_configs(root: Path) -> list[dict]:
    card = root / layout.CARD_FILE
    if not card.exists():
        return []
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---"):
        raise InputError("the card has no YAML front matter", path=str(card))
    return layout.card_configs(text, source=str(card))


def _check_card(root: Path, report: CheckReport) -> None:
    try:
        configs = _card_configs(root)
    except InputError as exc:
        report.problems.append(exc.message)
        return
    for cfg in configs:
        name = cfg.get("config_name", "?") if isinstance(cfg, dict) else "?"
        if not isinstance(cfg, dict):
            report.problems.append(f"{layout.CARD_FILE}: config {cfg!r} is not a mapping")
            continue
        for split, pattern in layout.config_data_files(cfg):
            if not glob.glob(str(root / pattern)):
                report.problems.append(
                    f"{layout.CARD_FILE}: config {name!r} split {split!r} points at {pattern}, "
                    "which matches no file in the release")


def _check_schemas(root: Path, spec: SuiteSpec, report: CheckReport) -> None:
    tables: list[tuple[str, str]] = []
    for sub in spec.subsets:
        for kind in ("queries", "qrels", "top_ranked", "excluded"):
            tables.append((layout.subset_file(sub.name, kind), kind))
    for split in spec.provenance_splits:
        for kind in ("pool", "first_stage", "runs"):
            tables.append((layout.provenance_file(kind, split), kind))
    for rel, kind in tables:
        path = root / rel
        if not path.exists():
            continue
        try:
            schema = pq.read_schema(path)
            layout.check_columns(schema.empty_table(), kind, path)
        except (pa.ArrowInvalid, OSError) as exc:
            report.problems.append(f"{path}: cannot read parquet ({exc})")
        except InputError as exc:
            report.problems.append(exc.message)


def _check_gains(root: Path, spec: SuiteSpec, history: History, report: CheckReport) -> None:
    current = history.latest
    assert current is not None
    params_path = root / current.item_params
    if not params_path.exists():
        return  # reported as a missing file
    try:
        params = ItemParams.read(params_path)
    except InputError as exc:
        report.problems.append(exc.message)
        return
    link = current.link
    for sub in spec.subsets:
        rel = layout.subset_file(sub.name, "qrels")
        path = root / rel
        if not path.exists():
            continue
        try:
            table = pq.read_table(path, columns=["query-id", "corpus-id", "gain", "theta"])
        except (pa.ArrowInvalid, OSError, KeyError) as exc:
            report.problems.append(f"{path}: cannot read gain and theta ({exc})")
            continue
        report.qrels_rows += table.num_rows
        theta = table["theta"].to_numpy(zero_copy_only=False).astype(np.float64)
        g = table["gain"].to_numpy(zero_copy_only=False).astype(np.float64)
        has_theta = ~np.isnan(theta)
        expected = np.zeros_like(theta)
        if has_theta.any():
            expected[has_theta] = gain(theta[has_theta], params, link)
        # a document the judge never scored: theta null, gain 0.0 or null
        g_cmp = np.where(~has_theta & np.isnan(g), 0.0, g)
        bad = ~(np.abs(g_cmp - expected) <= GAIN_TOLERANCE)
        if not bad.any():
            continue
        rows = np.flatnonzero(bad)
        qids = table["query-id"].to_pylist()
        dids = table["corpus-id"].to_pylist()
        shown = "; ".join(
            f"row {i} (query {qids[i]!r}, doc {dids[i]!r}): gain {g[i]!r}, "
            f"{link}(theta={theta[i]!r}) = {expected[i]!r}"
            for i in rows[:MAX_ROWS_SHOWN])
        more = f" (and {len(rows) - MAX_ROWS_SHOWN} more)" if len(rows) > MAX_ROWS_SHOWN else ""
        report.problems.append(
            f"{path}: field 'gain': {len(rows)} row(s) differ from the link of their theta "
            f"by more than {GAIN_TOLERANCE:g} under {current.item_params}: {shown}{more}")


def check_release_dir(root: str | Path, *, suite: str | None = None) -> CheckReport:
    """Check a release directory; the report lists every problem found (empty when fine)."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"release directory not found: {root}")
    report = CheckReport(root=root, files=release_files(root))
    suite = suite or layout.detect_suite(root)
    if suite is None:
        report.problems.append(f"cannot tell the suite: {layout.BUILD_MANIFEST} has no 'suite' "
                               f"and the card's tags name none")
        return report
    report.suite = suite
    try:
        spec = load_spec(suite)
    except RcpDataError as exc:
        report.problems.append(exc.message)
        return report
    try:
        report.history = read_history(root / layout.RELEASES_JSON, for_commit=True)
    except InputError as exc:
        report.problems.append(exc.message)
    history = report.history
    present = set(report.files)
    for rel in required_files(root, spec, history):
        if rel not in present:
            report.problems.append(f"{root / rel}: missing file (the layout requires it)")
    repo_name = (history.repo if history else spec.repo).split("/")[-1]
    if f"{repo_name}.py" in present:
        report.problems.append(f"{repo_name}.py: a Python file named after the repository "
                               "makes datasets.load_dataset refuse the repo")
    _check_card(root, report)
    _check_schemas(root, spec, report)
    if history is not None:
        cur = history.latest
        assert cur is not None
        if cur.tag != release_tag(cur.release, cur.judge_model):
            report.problems.append(f"{layout.RELEASES_JSON}: tag {cur.tag!r} does not match "
                                   "its release and judge")
        _check_gains(root, spec, history, report)
    log.info("checked %s: %d files, %d qrels rows, %d problem(s)", root, len(report.files),
             report.qrels_rows, len(report.problems))
    return report
