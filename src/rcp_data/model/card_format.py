"""The card's format: its YAML front matter and configs, and its result tables.

The one home of what a card's result tables look like: the cutoff k they show, the metric,
tie-rule and view titles, the Markdown table a card (and ``rcp-data replay``/``score``) prints,
and the parser that reads such tables back from a card (this project's Markdown cards and the
published cards' tab-separated plain text).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rcp_data.core.errors import InputError
from rcp_data.core.specs import RULE_LETTERS, RULE_NAMES, SHOWN_TIE_RULES, TIE_RULES, SuiteSpec
from rcp_data.model.cells import CARD_K, escape_cell  # noqa: F401  (home: model.cells)
from rcp_data.model.layout import CARD_FILE

if TYPE_CHECKING:
    import pandas as pd

PAPER_K = 10                      # the cutoff of the paper's tables and agreement numbers
CARD_METRICS = ("rcp_ndcg", "qrel_ndcg")      # the card's metrics, in the order it shows them
METRIC_TITLES = {"rcp_ndcg": "RCP-nDCG", "qrel_ndcg": "qrel-nDCG", "count_ndcg": "Count-nDCG",
                 "raw_bt_ndcg": "Raw-BT-nDCG"}
RULE_TITLES = {rule: f"rule ({RULE_LETTERS[rule]}): {RULE_NAMES[rule]}" for rule in TIE_RULES}
LETTER_RULES = {v: k for k, v in RULE_LETTERS.items()}
NATIVE_VIEW_HEADING = "Native-language questions (one language per domain)"


# -- the card's front matter -----------------------------------------------------------------
def card_front_matter(card_text: str, *, source: str = CARD_FILE) -> dict:
    """The YAML front matter of a card (empty without one); invalid YAML is an InputError."""
    import yaml

    if not card_text.startswith("---"):
        return {}
    try:
        # libyaml's safe loader when PyYAML has it (the pure-Python one takes 0.2 s on a
        # card of 200 configs)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        front = yaml.load(card_text.split("---", 2)[1], Loader=loader) or {}  # noqa: S506
    except (yaml.YAMLError, IndexError) as exc:
        raise InputError(f"front matter is not valid YAML ({exc})", path=source) from exc
    if not isinstance(front, dict):
        raise InputError("front matter is not a mapping", path=source)
    return front


def card_configs(card_text: str, *, source: str = CARD_FILE) -> list[dict]:
    """The ``configs:`` list of a card's YAML front matter (empty without front matter)."""
    configs = card_front_matter(card_text, source=source).get("configs") or []
    if not isinstance(configs, list):
        raise InputError("'configs' must be a list", path=source, field="configs")
    return configs


def config_data_files(config: dict) -> list[tuple[str, str]]:
    """``(split, path pattern)`` of every data file a card config declares."""
    files = config.get("data_files") or []
    if isinstance(files, str | dict):
        files = [files]
    out = []
    for entry in files:
        if isinstance(entry, str):
            out.append(("", entry))
        elif isinstance(entry, dict):
            paths = entry.get("path")
            for p in paths if isinstance(paths, list) else [paths]:
                out.append((str(entry.get("split", "")), str(p)))
    return out


# -- the result tables -----------------------------------------------------------------------
def metric_label(metric: str, k: int = CARD_K) -> str:
    """E.g. ``RCP-nDCG@10``."""
    return f"{METRIC_TITLES[metric]}@{k}"


def table_title(metric: str, k: int, tie_rule: str) -> str:
    """E.g. ``RCP-nDCG@10 (%), rule (a): document-id tie-break``."""
    return f"{metric_label(metric, k)} (%), {RULE_TITLES[tie_rule]}"


def view_heading(spec: SuiteSpec, view: str) -> str | None:
    """The cards' heading above a view's tables (None for the plain subsets view)."""
    if view == "native":
        return NATIVE_VIEW_HEADING
    if view == "languages":
        return f"Mean over the {len(spec.view_languages)} language subsets (the mteb task score)"
    return None


def format_percent(v: float | None) -> str:
    """A fraction as printed in a card table: percent, one decimal, ``–`` when missing."""
    return "–" if v is None or math.isnan(v) else f"{100.0 * v:.1f}"




def tables_rule(spec: SuiteSpec) -> str:
    """The tie rule whose result tables a card prints: the suite's paper rule when it is one of
    the shown rules, else rule (b); the other shown rule is summarised, not tabulated."""
    return spec.paper_tie_rule if spec.paper_tie_rule in SHOWN_TIE_RULES else "group-mean"


def summarised_rule(spec: SuiteSpec) -> str:
    """The shown rule whose tables a card summarises (*Effect of the tie rule*)."""
    return next(r for r in SHOWN_TIE_RULES if r != tables_rule(spec))


def render_markdown_table(table: pd.DataFrame, spec: SuiteSpec, *, title: str | None = None,
                          first_header: str = "Reranker") -> str:
    """A card table: short names (spec), %, one decimal, labels from the spec, Mean last."""
    labels = [escape_cell("Mean" if c == "mean" else spec.column_label(str(c)))
              for c in table.columns]
    lines = []
    if title:
        lines += [f"**{title}**", ""]
    lines.append("| " + " | ".join([first_header, *labels]) + " |")
    lines.append("|---|" + "---:|" * len(labels))
    for model in table.index:
        cells = [format_percent(table.at[model, c]) for c in table.columns]
        lines.append("| " + " | ".join([escape_cell(spec.short_name(str(model))), *cells]) + " |")
    return "\n".join(lines)


# -- reading the result tables back ------------------------------------------------------------
_TITLE = re.compile(r"^\W*(RCP|qrel)-nDCG@(\d+)\s*\(%\),\s*rule\s*\(([abc])\)", re.IGNORECASE)


@dataclass
class CardTable:
    """One result table as a card prints it (values in points, labels as printed)."""

    metric: str
    k: int
    tie_rule: str
    view: str | None
    columns: list[str]
    rows: list[tuple[str, list[float | None]]]


def _split_row(line: str) -> list[str]:
    if "\t" in line and not line.lstrip().startswith("|"):
        return [c.strip() for c in line.split("\t")]
    cells = re.split(r"(?<!\\)\|", line.strip().removeprefix("|").removesuffix("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def _is_table_line(line: str) -> bool:
    s = line.strip()
    return s.startswith("|") or "\t" in s


def _view_hint(line: str) -> str | None:
    s = line.strip().lstrip("#*> ").rstrip("*").strip().lower()
    if not s or len(s) > 120 or _is_table_line(line):
        return None
    if s.startswith(("native-language", "native language")) or "(native view)" in s:
        return "native"
    if "language subsets" in s or "(languages view)" in s or s.startswith("mean over the"):
        return "languages"
    return None


def _value(cell: str) -> float | None:
    cell = cell.strip().strip("*")
    if cell in ("", "–", "-", "—", "n/a"):
        return None
    try:
        return float(cell)
    except ValueError:
        return None


def card_body(text: str) -> str:
    """A card's text after its YAML front matter (``---`` ... ``---``); the whole text when
    it has none. A later ``---`` line (a Markdown rule) belongs to the body."""
    if not text.startswith("---"):
        return text
    end = text.find("\n---", 3)
    if end < 0:
        return text
    newline = text.find("\n", end + 4)
    return text[newline + 1:] if newline >= 0 else ""


def parse_card_tables(text: str) -> list[CardTable]:
    """The result tables of a card (Markdown or the plain-text tab-separated form)."""
    lines = card_body(text).splitlines()
    tables: list[CardTable] = []
    view: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        hint = _view_hint(line)
        if hint:
            view = hint
        m = _TITLE.match(line.strip().lstrip("#").strip())
        if not m:
            i += 1
            continue
        metric = "rcp_ndcg" if m.group(1).lower() == "rcp" else "qrel_ndcg"
        k, rule = int(m.group(2)), LETTER_RULES[m.group(3).lower()]
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines) or not _is_table_line(lines[i]):
            continue
        header = _split_row(lines[i])
        i += 1
        rows = []
        while i < len(lines) and _is_table_line(lines[i]):
            cells = _split_row(lines[i])
            i += 1
            if all(set(c) <= set("-: ") for c in cells):
                continue
            rows.append((cells[0], [_value(c) for c in cells[1:]]))
        tables.append(CardTable(metric, k, rule, view, header[1:], rows))
    return tables


__all__ = ["CARD_K", "CARD_METRICS", "PAPER_K", "LETTER_RULES", "METRIC_TITLES", "NATIVE_VIEW_HEADING",
           "RULE_TITLES", "CardTable", "card_body", "card_configs", "card_front_matter",
           "config_data_files", "escape_cell", "format_percent", "metric_label", "parse_card_tables",
           "summarised_rule", "tables_rule",
           "render_markdown_table", "table_title", "view_heading"]
