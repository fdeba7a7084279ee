"""Pre-publish checks of a release directory.

Nothing is uploaded unless these pass: every file the layout and the suite spec require is
there, every card config points at files that exist, every table has its columns, every
``gain`` equals the link of its ``theta`` (within 1e-12) under the item parameters that
``provenance/releases.json`` names, and releases.json is consistent.
"""

from __future__ import annotations

import glob
import logging
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.checks.reports import CheckReport
from rcp_data.core.errors import InputError, NotFoundError, RcpDataError
from rcp_data.core.errors import shown as show_value
from rcp_data.core.files import release_paths
from rcp_data.core.gains import GAIN_TOLERANCE, ItemParams, gain_mismatches
from rcp_data.core.io import float_values, read_parquet
from rcp_data.core.specs import SuiteSpec, suite_key
from rcp_data.model import layout
from rcp_data.model.card_format import card_configs, config_data_files
from rcp_data.model.history import History, read_history, release_tag
from rcp_data.model.suite import release_spec, which_suite
from rcp_data.model.tables import check_columns

log = logging.getLogger(__name__)

MAX_ROWS_SHOWN = 3


def release_files(root: Path) -> list[str]:
    """Relative POSIX paths of every file a release uploads (hidden files and caches skipped)."""
    return release_paths(root)


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
    return card_configs(text, source=str(card))


def _check_card(root: Path) -> list[str]:
    try:
        configs = _card_configs(root)
    except InputError as exc:
        return [exc.message]
    problems = []
    for cfg in configs:
        name = cfg.get("config_name", "?") if isinstance(cfg, dict) else "?"
        if not isinstance(cfg, dict):
            problems.append(f"{layout.CARD_FILE}: config {cfg!r} is not a mapping")
            continue
        for split, pattern in config_data_files(cfg):
            if not glob.glob(str(root / pattern)):
                problems.append(
                    f"{layout.CARD_FILE}: config {name!r} split {split!r} points at {pattern}, "
                    "which matches no file in the release")
    return problems


def _check_schemas(root: Path, spec: SuiteSpec) -> list[str]:
    tables: list[tuple[str, str]] = []
    for sub in spec.subsets:
        for kind in ("queries", "qrels", "top_ranked", "excluded"):
            tables.append((layout.subset_file(sub.name, kind), kind))
    for split in spec.provenance_splits:
        for kind in ("pool", "first_stage", "runs"):
            tables.append((layout.provenance_file(kind, split), kind))
    problems = []
    for rel, kind in tables:
        path = root / rel
        if not path.exists():
            continue
        try:
            check_columns(pq.read_schema(path), kind, path)
        except (pa.ArrowInvalid, OSError) as exc:
            problems.append(f"{path}: cannot read parquet ({exc})")
        except InputError as exc:
            problems.append(exc.message)
    return problems


def _check_gains(root: Path, spec: SuiteSpec, history: History) -> tuple[list[str], int]:
    """Problems of the gains (each qrels row's gain is the link of its theta) and the number
    of qrels rows read."""
    current = history.latest
    assert current is not None
    params_path = root / current.item_params
    if not params_path.exists():
        return [], 0  # reported as a missing file
    try:
        params = ItemParams.read(params_path)
    except InputError as exc:
        return [exc.message], 0
    link = current.link
    problems, rows_read = [], 0
    for sub in spec.subsets:
        rel = layout.subset_file(sub.name, "qrels")
        path = root / rel
        if not path.exists():
            continue
        try:
            table = read_parquet(path, columns=["query-id", "corpus-id", "gain", "theta"],
                                 what="a qrels table")
            theta, g = float_values(table["theta"]), float_values(table["gain"])
        except InputError as exc:
            problems.append(exc.message)
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:  # not numbers
            problems.append(f"{path}: cannot read gain and theta ({exc})")
            continue
        rows_read += table.num_rows
        bad, expected = gain_mismatches(theta, g, params, link)
        if not bad.any():
            continue
        rows = np.flatnonzero(bad)
        qids = table["query-id"].to_pylist()
        dids = table["corpus-id"].to_pylist()
        shown = "; ".join(
            f"row {i} (query {qids[i]!r}, doc {dids[i]!r}): gain {show_value(g[i])}, "
            f"{link}(theta={show_value(theta[i])}) = {show_value(expected[i])}"
            for i in rows[:MAX_ROWS_SHOWN])
        more = f" (and {len(rows) - MAX_ROWS_SHOWN} more)" if len(rows) > MAX_ROWS_SHOWN else ""
        problems.append(
            f"{path}: field 'gain': {len(rows)} row(s) differ from the link of their theta "
            f"by more than {GAIN_TOLERANCE:g} under {current.item_params}: {shown}{more}")
    return problems, rows_read


def check_release_dir(root: str | Path, *, suite: str | None = None) -> CheckReport:
    """Check a release directory; the report lists every problem found (empty when fine)."""
    root = Path(root)
    if not root.is_dir():
        raise NotFoundError(f"release directory not found: {root}")
    files = release_files(root)
    suite = suite_key(suite) if suite else which_suite(root)
    if suite is None:
        return CheckReport(root=root, files=files, problems=[
            f"cannot tell the suite: {layout.BUILD_MANIFEST} has no 'suite' and the card's tags "
            "name none"])
    try:
        spec = release_spec(root, suite)
    except RcpDataError as exc:
        return CheckReport(root=root, suite=suite, files=files, problems=[exc.message])
    problems: list[str] = []
    history = None
    try:
        history = read_history(root / layout.RELEASES_JSON, for_commit=True)
    except InputError as exc:
        problems.append(exc.message)
    present = set(files)
    for rel in required_files(root, spec, history):
        if rel not in present:
            problems.append(f"{root / rel}: missing file (the layout requires it)")
    repo_name = (history.repo if history else spec.repo).split("/")[-1]
    if f"{repo_name}.py" in present:
        problems.append(f"{repo_name}.py: a Python file named after the repository "
                        "makes datasets.load_dataset refuse the repo")
    problems += _check_card(root)
    problems += _check_schemas(root, spec)
    qrels_rows = 0
    if history is not None:
        cur = history.latest
        assert cur is not None
        if cur.tag != release_tag(cur.release, cur.judge_model):
            problems.append(f"{layout.RELEASES_JSON}: tag {cur.tag!r} does not match "
                            "its release and judge")
        gain_problems, qrels_rows = _check_gains(root, spec, history)
        problems += gain_problems
    log.info("checked %s: %d files, %d qrels rows, %d problem(s)", root, len(files),
             qrels_rows, len(problems))
    return CheckReport(root=root, suite=suite, history=history, files=files, problems=problems,
                       qrels_rows=qrels_rows)
