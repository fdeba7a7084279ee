"""Compare result tables cell by cell: replay JSON, dataset cards, ``paper_values.json`` files.

A cell is keyed by metric (``rcp_ndcg``/``qrel_ndcg``), cutoff k, tie rule, view, model (hub id;
short names are mapped through the suite spec) and column (subset or domain key, or ``mean``).
Values are in points (%). Cards are Markdown (``| Reranker | ... |`` tables under bold titles)
or plain text (tab-separated tables under title lines, as the ViDoRe card); a card's tables
carry their tie rule in the title (``rule (a)``/``(b)``/``(c)``) and, for suites with
languages, their view in the heading above them. The paper's numbers are the suite's paper
rule and paper view.

Only the reference groups (metric, k, tie rule, view) that the compared tables also hold are
compared. A cell matches when ``|diff| <= tolerance + 1e-6`` (0.05 points); against the paper,
a cell listed in ``provenance/known_deviations.json`` within its bound is ``known``; anything
else, or a reference cell the tables lack, is ``failed``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rcp_data import resources
from rcp_data.core.errors import InputError, NotFoundError, UsageError
from rcp_data.core.io import loads_json, read_json, read_text
from rcp_data.core.specs import RULE_LETTERS, SuiteSpec, load_spec
from rcp_data.model.card_format import escape_cell, parse_card_tables
from rcp_data.model.suite import which_suite
from rcp_data.scoring.replay import ALL_METRICS, ReplayResult, model_order

TOLERANCE = 0.05
RESULT_SOURCE = "<replay>"        # how a comparison names tables given in memory
EPS = 1e-6
PRINTED_HALF_UNIT = 0.05          # tables printed to one decimal
_PAPER_METRIC = re.compile(r"^(rcp|qrel)_ndcg(\d+)$")


@dataclass(frozen=True)
class CellKey:
    metric: str
    k: int
    tie_rule: str
    view: str
    model: str
    column: str


@dataclass
class TableSet:
    """The cells of one source (values in points)."""

    source: str
    kind: str                         # replay | card | paper
    suite: str | None
    cells: dict[CellKey, float]
    half_unit: float = 0.0            # rounding of printed values (0 for replay JSON)

    def groups(self) -> set[tuple[str, int, str, str]]:
        return {(c.metric, c.k, c.tie_rule, c.view) for c in self.cells}


@dataclass(frozen=True)
class Comparison:
    """Outcome of :func:`compare_tables`; ``rows`` as in ``rcp-data compare --json``."""

    tables: str
    reference: str
    rows: list[dict] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r["status"] == status)

    @property
    def ok(self) -> bool:
        return self.count("failed") == 0

    def to_json(self) -> dict:
        return {"cells": len(self.rows), "matched": self.count("matched"),
                "known": self.count("known"), "failed": self.count("failed"), "rows": self.rows}

    def summary(self) -> str:
        """The table ``compare`` prints: a count line, then one line per cell that did not
        match; every name from the files is one escaped cell (a newline, tab, ``|`` or
        terminal escape in a model or column name never adds or breaks a row)."""
        e = escape_cell
        lines = [f"{e(str(self.tables), markdown=False)} vs "
                 f"{e(str(self.reference), markdown=False)}: {len(self.rows)} cells, "
                 f"{self.count('matched')} matched, {self.count('known')} known, "
                 f"{self.count('failed')} failed"]
        for r in self.rows:
            if r["status"] != "matched":
                t = "missing" if r["tables"] is None else f"{r['tables']:.2f}"
                d = "" if r["diff"] is None else f" (diff {r['diff']:+.3f})"
                lines.append(f"  {r['status']:7} {e(str(r['metric']))}@{r['k']} rule "
                             f"({RULE_LETTERS[r['tie_rule']]}) {e(str(r['view']))} | "
                             f"{e(str(r['model']))} | {e(str(r['column']))}: {t} vs "
                             f"{r['reference']:.2f}{d}")
        return "\n".join(lines)


# -- known deviations ----------------------------------------------------------------------------
@dataclass(frozen=True)
class KnownDeviation:
    suite: str
    metric: str
    k: int
    column: str
    cells: int
    bound: float
    reason: str = ""


def load_known_deviations(path: str | Path | None = None) -> list[KnownDeviation]:
    """The paper's known deviations (default ``provenance/known_deviations.json``)."""
    path = Path(path) if path else resources.provenance_dir() / "known_deviations.json"
    data = read_json(path)
    out = []
    for i, d in enumerate(data.get("deviations", [])):
        try:
            out.append(KnownDeviation(suite=d["suite"], metric=d["metric"], k=int(d["k"]),
                                      column=d["column"], cells=int(d["cells"]),
                                      bound=float(d["bound"]), reason=d.get("reason", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"bad deviation entry ({exc})", path=str(path), row=i) from exc
    return out


# -- reading sources -----------------------------------------------------------------------------


def _spec_for(spec: SuiteSpec | str | None, guess: str | None, source: str) -> SuiteSpec:
    if isinstance(spec, SuiteSpec):
        return spec
    name = spec or guess
    if not name:
        raise UsageError(f"cannot tell which suite {source} belongs to; pass --suite")
    return load_spec(name)


def _column(spec: SuiteSpec, label: str) -> str:
    return "mean" if label.strip().lower() == "mean" else spec.column_key(label.strip())


def load_tables(path: str | Path | ReplayResult, spec: SuiteSpec | str | None = None
                ) -> TableSet:
    """Read a replay JSON, a card (``README.md`` or text) or a ``paper_values.json`` file;
    or take the tables of a replay (or score) result in memory."""
    if not isinstance(path, str | Path):
        return _replay_tables(path.to_json(), Path(RESULT_SOURCE),
                              spec if spec is not None else path.spec)
    path = Path(path)
    try:
        text = read_text(path)
    except FileNotFoundError as exc:
        raise NotFoundError("file not found", path=str(path)) from exc
    except IsADirectoryError:
        return load_tables(path / "README.md", spec)
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start}: {exc.reason}); expected a replay "
                         "JSON, a card or paper values", path=str(path)) from None
    data = loads_json(text, source=str(path)) if text.lstrip().startswith("{") else None
    if isinstance(data, dict) and "leaderboards" in data:
        return _paper_tables(data, path, spec)
    if isinstance(data, dict) and "metrics" in data:
        return _replay_tables(data, path, spec)
    if data is not None:
        raise InputError("JSON is neither a replay (metrics) nor paper values (leaderboards)",
                         path=str(path))
    return _card_tables(text, path, spec)


def _card_tables(text: str, path: Path, spec: SuiteSpec | str | None) -> TableSet:
    raw = parse_card_tables(text)
    if not raw:
        raise InputError("no result tables found (titles like 'RCP-nDCG@10 (%), rule (a)')",
                         path=str(path))
    guess = which_suite(card_text=text, columns=[c for t in raw for c in t.columns])
    sp = _spec_for(spec, guess, str(path))
    cells: dict[CellKey, float] = {}
    for t in raw:
        view = t.view or sp.card_views[0]
        cols = [_column(sp, c) for c in t.columns]
        for name, values in t.rows:
            model = sp.hub_id(name)
            for col, v in zip(cols, values, strict=False):
                if v is not None:
                    cells[CellKey(t.metric, t.k, t.tie_rule, view, model, col)] = v
    return TableSet(str(path), "card", sp.name, cells, PRINTED_HALF_UNIT)


def _replay_tables(data: dict, path: Path, spec: SuiteSpec | str | None) -> TableSet:
    try:
        k, rule, view = int(data["k"]), data["tie_rule"], data["view"]
        metrics = data["metrics"]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"replay JSON lacks {exc}", path=str(path)) from exc
    cols = [c for m in metrics.values() for row in m.values() for c in row]
    sp = _spec_for(spec, which_suite(columns=cols), str(path))
    cells = {}
    for metric, table in metrics.items():
        if metric not in ALL_METRICS:
            raise InputError(f"unknown metric {metric!r}", path=str(path), field="metrics")
        for model, row in table.items():
            for col, v in row.items():
                if v is not None:
                    cells[CellKey(metric, k, rule, view, sp.hub_id(model),
                                  _column(sp, col))] = 100.0 * float(v)
    return TableSet(str(path), "replay", sp.name, cells, 0.0)


def _paper_tables(data: dict, path: Path, spec: SuiteSpec | str | None) -> TableSet:
    sp = _spec_for(spec, None, str(path))
    key = sp.paper_key or sp.name
    boards = data["leaderboards"]
    if key not in boards:
        raise InputError(f"no leaderboard {key!r} for suite {sp.name!r} "
                         f"(has {', '.join(boards)})", path=str(path), field="leaderboards")
    cells = {}
    for mkey, table in boards[key].items():
        m = _PAPER_METRIC.match(mkey)
        if not m:
            continue
        metric = f"{m.group(1)}_ndcg"
        for model, row in table.items():
            for col, v in row.items():
                if v is not None:
                    cells[CellKey(metric, int(m.group(2)), sp.paper_tie_rule, sp.paper_view,
                                  sp.hub_id(model), _column(sp, col))] = float(v)
    return TableSet(str(path), "paper", sp.name, cells, PRINTED_HALF_UNIT)


# -- comparing -----------------------------------------------------------------------------------
def compare_tables(tables: TableSet, reference: TableSet, spec: SuiteSpec, *,
                   tolerance: float = TOLERANCE,
                   known: list[KnownDeviation] | None = None) -> Comparison:
    """Match every reference cell of the groups both sides hold (see module docstring)."""
    shared = tables.groups() & reference.groups()
    if not shared:
        raise UsageError(
            f"nothing to compare: {tables.source} holds "
            f"{_describe(tables.groups())}, {reference.source} holds "
            f"{_describe(reference.groups())}")
    against_paper = "paper" in (tables.kind, reference.kind)
    other_half = tables.half_unit if reference.kind == "paper" else reference.half_unit
    deviations = [d for d in (known or []) if d.suite == spec.name] if against_paper else []
    models = model_order(spec, sorted({c.model for c in reference.cells}))
    col_order = {c: i for i, c in enumerate([*spec.subset_names,
                                             *(d.name for d in spec.domains), "mean"])}
    keys = sorted(
        (c for c in reference.cells if (c.metric, c.k, c.tie_rule, c.view) in shared),
        key=lambda c: (ALL_METRICS.index(c.metric), c.k, c.tie_rule, c.view,
                       models.index(c.model), col_order.get(c.column, len(col_order)),
                       c.column))
    rows = []
    for c in keys:
        ref = reference.cells[c]
        val = tables.cells.get(c)
        diff = None if val is None else val - ref
        if diff is None:
            status = "failed"
        elif abs(diff) <= tolerance + EPS:
            status = "matched"
        else:
            status = "failed"
        rows.append({"metric": c.metric, "model": spec.short_name(c.model), "column": c.column,
                     "tables": val, "reference": ref, "diff": diff, "status": status,
                     "k": c.k, "tie_rule": c.tie_rule, "view": c.view})
    _apply_known(rows, deviations, other_half)
    return Comparison(tables.source, reference.source, rows)


def _apply_known(rows: list[dict], deviations: list[KnownDeviation], half: float) -> None:
    """Mark failed cells within a known deviation's bound as ``known`` (at most its count)."""
    for d in deviations:
        cand = [r for r in rows
                if r["status"] == "failed" and r["diff"] is not None and r["metric"] == d.metric
                and r["k"] == d.k and r["column"] == d.column
                and abs(r["diff"]) <= d.bound + half + EPS]
        cand.sort(key=lambda r: abs(r["diff"]))
        for r in cand[: d.cells]:
            r["status"] = "known"


def _describe(groups: set) -> str:
    if not groups:
        return "no cells"
    return "; ".join(f"{m}@{k} rule ({RULE_LETTERS[r]}) view {v}" for m, k, r, v in sorted(groups))


def compare_files(tables: str | Path | ReplayResult, reference: str | Path | ReplayResult, *,
                  suite: str | SuiteSpec | None = None, tolerance: float = TOLERANCE,
                  known_path: str | Path | None = None) -> Comparison:
    """Load both sides (the suite from ``suite``, else inferred from either) and compare;
    either side may be a replay (or score) result in memory, whose spec then names the
    suite."""
    spec: SuiteSpec | None = load_spec(suite) if isinstance(suite, str) and suite else \
        suite or None
    if spec is None:
        spec = next((side.spec for side in (tables, reference)
                     if not isinstance(side, str | Path)), None)
    first, second = (tables, reference)
    # read the side that can name its suite first, so a paper file can use it
    try:
        t = load_tables(first, spec)
    except UsageError:
        r = load_tables(second, spec)
        spec = load_spec(r.suite) if r.suite else spec
        t = load_tables(first, spec)
    else:
        spec = spec or (load_spec(t.suite) if t.suite else None)
        r = load_tables(second, spec)
    spec = spec or load_spec(t.suite or r.suite)
    if t.suite and r.suite and t.suite != r.suite:
        raise UsageError(f"{tables} is suite {t.suite!r} but {reference} is {r.suite!r}")
    return compare_tables(t, r, spec, tolerance=tolerance,
                          known=load_known_deviations(known_path))
