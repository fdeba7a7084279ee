"""Render a release's dataset card (``README.md``) from its data and release history.

Every number in the card is computed here from the release directory (tables, item parameters,
runs replayed by :mod:`rcp_data.scoring.replay`), taken from the release history or read from a
typed settings record (the card format's k and titles, :mod:`rcp_data.model.card_format`; the
Stage A fit's settings, :data:`rcp_data.calibration.bt_settings.BT_SETTINGS`). This module
hands the template typed facts (small frozen dataclasses); every sentence of the card lives in
``templates/card.md.j2``. Rendering is deterministic: the same release gives the same bytes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
from huggingface_hub import DatasetCardData

from rcp_data.calibration.bt_settings import BT_SETTINGS
from rcp_data.calibration.tournament import SCORE_RANGE
from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import atomic_write_text
from rcp_data.core.specs import (
    RULE_LETTERS,
    RULE_NAMES,
    SHOWN_TIE_RULES,
    SuiteSpec,
    check_no_todo,
)
from rcp_data.documents.card_counts import (
    SubsetFacts,
    all_subset_facts,
    corpus_key,
)
from rcp_data.documents.card_facts import (
    CardFacts,
    FirstStage,
    citation_text,
    computed_runs,
    copied_self_documents,
    first_stage,
    instructions,
    licence,
    paper_relation,
)
from rcp_data.documents.card_judging import judge_run_markdown
from rcp_data.documents.card_provenance import (
    PartOrigins,
    licence_parts,
    notice,
    part_origins,
    relation_parts,
)
from rcp_data.documents.card_text import _n, _span, card_environment
from rcp_data.documents.diagnostics_files import card_section
from rcp_data.documents.releases_md import render_release_table
from rcp_data.documents.rubric_table import rubric_table
from rcp_data.documents.taskfile import (
    families,
    has_ocr_view,
    main_score,
    task_name,
)
from rcp_data.model.card_format import (
    CARD_METRICS,
    metric_label,
    render_markdown_table,
    summarised_rule,
    table_title,
    tables_rule,
    view_heading,
)
from rcp_data.model.history import (
    History,
    judge_slug,
    new_release_history,
    read_history,
)
from rcp_data.model.layout import (
    BUILD_MANIFEST,
    CARD_FILE,
    OPTIONAL_PROVENANCE_KINDS,
    PROVENANCE_CONFIG,
    PROVENANCE_KINDS,
    RELEASES_JSON,
    TASK_FILE,
    corpus_pattern,
    provenance_file,
    subset_file,
)
from rcp_data.model.manifest import BuildManifest, load_manifest
from rcp_data.model.release import Release, corpus_file_facts, open_release, release_is_synthetic
from rcp_data.model.suite import release_spec
from rcp_data.scoring.replay import ReplayResult, load_release, model_order, replay_loaded

log = logging.getLogger(__name__)

# What a generated card has that the published cards do not, and why (the reference-card test
# allows exactly these differences).
ADDED_SECTIONS = {
    "Checks": "how to re-check a revision (rcp-data verify) and score a model on it "
              "(rcp-data score)",
}
ADDED_CONFIGS = {
    "provenance-first-stage": "each first-stage run and their fusion, which the published "
                              "NanoBEIR release did not keep (only the fused pool)",
    "provenance-judge-tournament": "the judge's Stage A tournament answers (Stage A provenance)",
    "provenance-judge-bt": "the Bradley-Terry scores fitted from those answers, so a refit can "
                           "be checked against them",
}

TIE_RULES_SHOWN = tuple((rule, RULE_LETTERS[rule], RULE_NAMES[rule]) for rule in SHOWN_TIE_RULES)
BASE_TAGS = ("mteb", "retrieval", "reranking", "rcp-ndcg", "graded-relevance", "llm-judge")
SUBSET_CONFIG_KINDS = ("corpus", "queries", "qrels", "gains", "top_ranked", "excluded")
OPTIONAL_SUBSET_KINDS = ("gains", "excluded")     # configs only where the release has the table
MAX_EXAMPLES = 4                 # excluded copies the card shows by id


LINK_FORMULAS = {
    "weighted_discrimination": "gain(θ) = Σ_c γ_c · σ(γ_c (θ − β_c)) / Σ_c γ_c        ∈ (0, 1)",
    "unweighted": "gain(θ) = (1/n) Σ_c σ(γ_c (θ − β_c))        ∈ (0, 1)",
    "logistic": "gain(θ) = σ(θ)        ∈ (0, 1)",
}


def link_formula(link: str) -> str:
    """The formula of a gain link (``criterion:Cn``: that criterion's pass probability)."""
    if link.startswith("criterion:"):
        c = link.split(":", 1)[1]
        return f"gain(θ) = σ(γ_{c} (θ − β_{c}))        ∈ (0, 1)"
    if link not in LINK_FORMULAS:
        raise InputError(f"no formula for gain link {link!r}")
    return LINK_FORMULAS[link]


def suite_tag(spec: SuiteSpec) -> str:
    """The tag naming the suite (``rcp_data.model.suite.which_suite`` reads it back)."""
    return spec.name.replace("_", "-")


# -- release history ---------------------------------------------------------------------------
def release_history(root: Path, spec: SuiteSpec, *, repo: str | None = None) -> History:
    """The release's history: its ``provenance/releases.json``, else a first release built
    from the build manifest (the commit that will hold it is not known yet)."""
    path = Path(root) / RELEASES_JSON
    if path.exists():
        return read_history(path)
    release = open_release(Path(root), suite=spec)
    if release.manifest is None:
        raise InputError(f"neither {RELEASES_JSON} nor a build manifest",
                         path=str(Path(root) / BUILD_MANIFEST))
    return new_release_history(release.manifest, repo=repo or spec.repo, suite=spec.name,
                               synthetic=release.synthetic)


# -- front matter ------------------------------------------------------------------------------
def config_entries(root: Path, spec: SuiteSpec) -> list[dict]:
    """``configs:`` of the card: every subset table and every provenance table present."""
    root = Path(root)
    configs = []
    corpora = set()
    for s in spec.subset_names:
        for kind in SUBSET_CONFIG_KINDS:
            if kind == "corpus":
                if corpus_key(spec, s) not in corpora:   # raises when the corpus is missing
                    corpus_file_facts(root, spec, s)
                    corpora.add(corpus_key(spec, s))
                path = corpus_pattern(spec, s)
            else:
                path = subset_file(s, kind)
                if not (root / path).exists():
                    if kind in OPTIONAL_SUBSET_KINDS:
                        continue
                    raise InputError(f"missing {kind} table of subset {s!r}", path=str(root / path))
            configs.append({"config_name": f"{s}-{kind}",
                            "data_files": [{"split": spec.split, "path": path}]})
    for kind in (*PROVENANCE_KINDS, *OPTIONAL_PROVENANCE_KINDS):
        files = [{"split": split, "path": provenance_file(kind, split)}
                 for split in spec.provenance_splits
                 if (root / provenance_file(kind, split)).exists()]
        if files:
            configs.append({"config_name": PROVENANCE_CONFIG[kind], "data_files": files})
    return configs


def card_data(root: Path, spec: SuiteSpec, history: History, *,
              synthetic: bool | None = None) -> DatasetCardData:
    judge = history.current.judge_model if history.current else ""
    tags = [*BASE_TAGS, f"judge-{judge_slug(judge)}", suite_tag(spec)]
    if synthetic is None:
        synthetic = release_is_synthetic(root, synthetic_suite=spec.synthetic)
    if synthetic:
        tags.append("synthetic")
    sources = sorted({s.mteb for s in spec.subsets if s.mteb and "/" in s.mteb})
    return DatasetCardData(
        configs=config_entries(root, spec),
        license=spec.license,
        language=list(spec.languages),
        task_categories=list(spec.task_categories),
        tags=tags,
        pretty_name=card_title(spec, synthetic),
        source_datasets=sources or None,
    )


def _schema_columns(path: Path) -> list[str]:
    return list(pq.read_schema(path).names)


def _cols(names: list[str]) -> str:
    return ", ".join(f"`{c}`" for c in names)


# -- replayed tables ---------------------------------------------------------------------------
def views_shown(spec: SuiteSpec) -> list[tuple[str, str | None]]:
    """Views of the results section (``spec.card_views``): ``(view, heading)``."""
    return [(view, view_heading(spec, view)) for view in spec.card_views]


def metrics_shown(spec: SuiteSpec) -> tuple[tuple[str, str], ...]:
    """The card's metrics with their labels at the card's main k (``RCP-nDCG@10``)."""
    return tuple((metric, metric_label(metric, spec.main_k)) for metric in CARD_METRICS)


def replay_results(root: Path, spec: SuiteSpec) -> dict[tuple[str, str, int], ReplayResult]:
    """Replayed tables per ``(view, tie_rule, k)`` (judge runs left out), from one load: the
    shown rules, and the suite's paper rule when it is not one of them, at each of the card's
    cutoffs (``spec.card_k``)."""
    data = load_release(root, spec)
    rules = list(SHOWN_TIE_RULES)
    if spec.paper_tie_rule not in rules:
        rules.append(spec.paper_tie_rule)
    return {(view, rule, k): replay_loaded(data, k=k, tie_rule=rule, view=view)
            for k in spec.card_k for view, _ in views_shown(spec) for rule in rules}


def at_main_k(spec: SuiteSpec, results: dict[tuple[str, str, int], ReplayResult]
              ) -> dict[tuple[str, str], ReplayResult]:
    """The replayed tables at the card's main k, per ``(view, tie_rule)``."""
    return {(view, rule): r for (view, rule, k), r in results.items() if k == spec.main_k}


def ranked_models(result: ReplayResult, spec: SuiteSpec) -> list[str]:
    """Rows ranked by the main metric (RCP-nDCG@k, Mean), best first; ties in the spec's
    reranker order."""
    mean = result.tables["rcp_ndcg"]["mean"]
    order = {m: i for i, m in enumerate(model_order(spec, list(mean.index)))}
    return sorted(mean.index, key=lambda m: (-float(mean[m]) if mean[m] == mean[m]
                                            else float("inf"), order[m]))


def _cell_diffs(results: dict[tuple[str, str], ReplayResult], view: str, metric: str,
                rule_a: str, rule_b: str) -> list[float]:
    """Per-cell differences (points) of two tie rules' tables, Mean column left out."""
    a = results[(view, rule_a)].to_json()["metrics"][metric]
    b = results[(view, rule_b)].to_json()["metrics"][metric]
    return [100.0 * (a[m][c] - b[m][c]) for m in a for c in a[m]
            if c != "mean" and a[m][c] is not None and b.get(m, {}).get(c) is not None]


@dataclass(frozen=True)
class TieEffect:
    """How far rules (a) and (b) lie apart on one metric of one view, per cell (points)."""

    label: str                 # the metric, e.g. RCP-nDCG@10
    view: str | None           # the view, when the card shows several
    max_abs: float             # max |(a) - (b)|
    mean: float                # mean (a) - (b)
    cells: int


@dataclass(frozen=True)
class ViewGap:
    """The mteb task score (mean of the language subsets) minus the native-language score,
    per cell under one rule (points)."""

    label: str
    letter: str
    mean: float
    cells: int
    low: float
    high: float


@dataclass(frozen=True)
class RuleDistance:
    """The largest per-cell distance of the suite's paper rule to rule (b) (points)."""

    label: str
    view: str | None
    max_abs: float


def tie_effects(spec: SuiteSpec, results: dict[tuple[str, str], ReplayResult]
                ) -> list[TieEffect]:
    """Max |(a) - (b)| and mean (a) - (b) per cell, in points, per view and metric."""
    out = []
    for view, heading in views_shown(spec):
        for metric, label in metrics_shown(spec):
            diffs = _cell_diffs(results, view, metric, "doc-id", "group-mean")
            if diffs:
                out.append(TieEffect(label, view if heading else None,
                                     max(abs(d) for d in diffs), float(np.mean(diffs)),
                                     len(diffs)))
    return out


def view_gaps(spec: SuiteSpec, results: dict[tuple[str, str], ReplayResult]) -> list[ViewGap]:
    """Suites with languages: how far the mteb task score (mean of the language subsets) lies
    from the native-language score, per cell under the suite's reference rule (b when its
    rule is not shown), in points."""
    if not spec.has_languages:
        return []
    rule = spec.paper_tie_rule if spec.paper_tie_rule in SHOWN_TIE_RULES else "group-mean"
    out = []
    for metric, label in metrics_shown(spec):
        lang = results[("languages", rule)].to_json()["metrics"][metric]
        native = results[("native", rule)].to_json()["metrics"][metric]
        diffs = [100.0 * (lang[m][c] - native[m][c]) for m in lang for c in lang[m]
                 if c != "mean" and lang[m][c] is not None
                 and native.get(m, {}).get(c) is not None]
        if diffs:
            out.append(ViewGap(label, RULE_LETTERS[rule], float(np.mean(diffs)), len(diffs),
                               min(diffs), max(diffs)))
    return out


def paper_rule_distances(spec: SuiteSpec, results: dict[tuple[str, str], ReplayResult]
                         ) -> list[RuleDistance]:
    """A paper rule the card does not show (pool order): its largest per-cell distance to
    rule (b) per view and metric, from the replay (a particular tie order need not lie
    between (a) and (b)). Empty for a shown rule."""
    if spec.paper_tie_rule in SHOWN_TIE_RULES:
        return []
    out = []
    for view, heading in views_shown(spec):
        for metric, label in metrics_shown(spec):
            diffs = _cell_diffs(results, view, metric, spec.paper_tie_rule, "group-mean")
            if diffs:
                out.append(RuleDistance(label, view if heading else None,
                                        max(abs(d) for d in diffs)))
    return out


# -- the card ----------------------------------------------------------------------------------
def render_card(root: Path, *, spec: SuiteSpec | None = None, history: History | None = None,
                repo: str | None = None,
                results: dict[tuple[str, str, int], ReplayResult] | None = None) -> str:
    """The card of the release directory ``root`` (text of ``README.md``); its result tables
    at each of the spec's cutoffs (``[suite] card_k``), its summaries at the first."""
    root = Path(root)
    spec = spec or release_spec(root)
    history = history or release_history(root, spec, repo=repo)
    repo = repo or history.repo
    # never a card of a spec with TODO markers, whichever command writes it (as build refuses
    # to prepare one); the repo the card names fills ``suite.repo``
    check_no_todo(spec, given=("suite.repo",) if repo else ())
    current = history.current
    if current is None:
        raise InputError("the release history has no current release", path=str(root))
    rd = open_release(root, suite=spec)
    synthetic = (release_is_synthetic(root, synthetic_suite=spec.synthetic)
                 or current.synthetic)
    origins = part_origins(spec, rd.manifest, synthetic=synthetic)
    facts_card = CardFacts.of(spec)
    facts = all_subset_facts(rd)
    item_params = ItemParams.read(root / current.item_params)
    fams = families(spec)
    number = current.release
    # ``results``: the release's replay_results, when the caller has them already
    every_k = results if results is not None else replay_results(root, spec)
    results = at_main_k(spec, every_k)
    models = sorted({m for r in every_k.values() for m in r.models})
    f = {
        "n_subsets": len(facts),
        "n_queries_text": _n(sum(x.queries for x in facts)),
        "n_tasks": len(fams),
        "example_task": task_name(spec, fams[0].family, number),
        "example_retrieval": task_name(spec, fams[0].family, number, view="retrieval"),
        "example_ocr": task_name(spec, fams[0].family, number, text_only=True),
        "example_name": fams[0].domain or spec.subset_names[0],
        "ocr": has_ocr_view(spec),
        "domains": bool(spec.domains),
        "judge": current.judge_model,
        "n_criteria": item_params.n_criteria,
        "criteria_text": (f"{item_params.criteria[0]}–{item_params.criteria[-1]}"
                          if item_params.n_criteria > 1 else item_params.criteria[0]),
        "link": current.link,
        "formula": link_formula(current.link),
        "item_params": current.item_params,
        "n_rerankers": len(models),
        "pinned": current.data_revision or current.revision,
        "upstream_name": "" if spec.synthetic else getattr(facts_card.upstream, "name", ""),
    }
    shown, other = tables_rule(spec), summarised_rule(spec)
    sections = []
    for view, heading in views_shown(spec):
        tables = []
        ranked = ranked_models(results[(view, shown)], spec)
        for k in spec.card_k:
            for metric in CARD_METRICS:
                table = every_k[(view, shown, k)].tables[metric].loc[ranked]
                tables.append({"caption": table_title(metric, k, shown),
                               "markdown": render_markdown_table(table, spec)})
        sections.append({"heading": heading, "tables": tables})
    manifest = load_manifest(root)
    judging = (manifest.parameters.get("judging") if manifest is not None else None)
    paper_view = spec.paper_view if spec.paper_view in spec.card_views else spec.card_views[0]
    paper_tables = results[(paper_view, spec.paper_tie_rule)].tables
    body = card_environment().get_template("card.md.j2").render(
        spec=spec, f=f, facts=facts_card, repo=repo, task_file=TASK_FILE,
        releases_json=RELEASES_JSON, title=card_title(spec, synthetic), synthetic=synthetic,
        generated=synthetic_facts(spec, rd), origins=origins, origins_notice=notice(origins),
        k=spec.main_k, ks=spec.card_k, main_score=main_score(spec), bt=BT_SETTINGS,
        score_range=SCORE_RANGE,
        judge_run=judge_run_markdown(rd.manifest),
        release_table=render_release_table(history, link_judges=not synthetic).rstrip("\n"),
        rubric=rubric_table(item_params, judging if isinstance(judging, dict) else None),
        shown_rule=RULE_LETTERS[shown], other_rule=RULE_LETTERS[other], other_rule_name=other,
        current=current,
        superseded=[r for r in history.releases if r.status == "superseded"],
        protocol=protocol_facts(spec, facts, rd),
        layout=layout_facts(root, spec, facts),
        instructions=instructions(spec, facts_card, rd),
        pool=pool_facts(spec, facts, rd, facts_card, synthetic=synthetic, origins=origins),
        notes=data_notes(spec, facts, rd, synthetic=synthetic),
        results=sections,
        paper_relation=replace(paper_relation(spec, paper_tables, history, synthetic=synthetic),
                               synthetic_parts=relation_parts(origins)),
        paper_rule_distances=paper_rule_distances(spec, results),
        tie_effects=tie_effects(spec, results),
        view_gaps=view_gaps(spec, results),
        rerankers=model_order(spec, models),
        licence=replace(licence(spec, facts_card, synthetic=synthetic),
                        synthetic_text=licence_parts(origins)),
        citation=citation_text(facts_card, spec),
        diagnostics=card_section(root, spec),
    )
    data = card_data(root, spec, history, synthetic=synthetic)
    text = f"---\n{data.to_yaml()}\n---\n\n{body.strip()}\n"
    check_card(text, data)
    return text


def card_title(spec: SuiteSpec, synthetic: bool) -> str:
    """The card's title: the suite's name, marked when a real suite was built from generated
    data (a synthetic suite's name says so itself)."""
    if synthetic and "SYNTHETIC" not in spec.pretty_name:
        return f"{spec.pretty_name}: SYNTHETIC build"
    return spec.pretty_name


@dataclass(frozen=True)
class SyntheticFacts:
    """What of a synthetic release was generated, from its build manifest."""

    everything: bool          # every table (a synthetic suite), not only the judge and runs
    judge: str
    computed: tuple[str, ...] = ()   # first-stage runs rcp-data computed (the manifest's record)
    all_computed: bool = False       # every fused run was computed, none generated


def synthetic_facts(spec: SuiteSpec, rd: Release) -> SyntheticFacts:
    manifest = rd.manifest
    judge = manifest.judge.model if manifest else ""
    everything = spec.synthetic or bool(manifest and manifest.source_fact("synthetic") is True)
    computed = tuple(c.key for c in computed_runs(manifest.first_stage if manifest else (),
                                                  spec.pool.retrievers))
    return SyntheticFacts(everything=bool(everything), judge=judge, computed=computed,
                          all_computed=bool(computed) and len(computed) == len(
                              spec.pool.retrievers))


def parse_card_data(text: str) -> DatasetCardData:
    """A card's metadata as huggingface_hub's :class:`DatasetCard` reads it (its front-matter
    pattern and its card-data class), the YAML parsed by libyaml's safe loader where PyYAML has
    it (``DatasetCard`` uses the pure-Python one: the same values, several times slower)."""
    import yaml
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    match = REGEX_YAML_BLOCK.search(text)
    if match is None:
        return DatasetCardData()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found = yaml.load(match.group(2), Loader=loader) or {}  # noqa: S506
    if not isinstance(found, dict):
        raise InputError("the rendered card's YAML front matter is not a mapping")
    return DatasetCardData(**found)


def check_card(text: str, data: DatasetCardData) -> None:
    """Parse the card back as huggingface_hub reads it (:func:`parse_card_data`); refuse a
    mismatch."""
    parsed = parse_card_data(text).to_dict()
    if parsed != data.to_dict():
        raise InputError("the rendered card's YAML does not parse back to its card data")
    for key in ("configs", "license", "tags", "pretty_name"):
        if not parsed.get(key):
            raise InputError(f"the rendered card has no {key!r}")


# -- the evaluation protocol ---------------------------------------------------------------------
@dataclass(frozen=True)
class ProtocolFacts:
    """The counts of *Evaluation protocol*."""

    with_exclusions: list[SubsetFacts]       # subsets with excluded documents
    copies: list[tuple[str, str, str]]       # (subset, query, document) filed under another id
    copy_subsets: list[str]
    examples_shown: int                      # copies shown by id, the others counted
    outside: list[SubsetFacts]               # subsets with positives outside the pool
    outside_total: int
    unjudged: int
    without_positive: int
    deep: dict[str, list[str]]               # {subset: queries with more positives than the pool}
    pool_size: int


def protocol_facts(spec: SuiteSpec, facts: list[SubsetFacts], rd: Release) -> ProtocolFacts:
    with_ex = [x for x in facts if x.excluded_docs]
    copies = copied_self_documents(rd) if with_ex else []
    deep = {x.name: list(x.deep_queries) for x in facts if x.deep_queries}
    return ProtocolFacts(
        with_exclusions=with_ex,
        copies=copies,
        copy_subsets=list(dict.fromkeys(s for s, _q, _d in copies)),
        examples_shown=MAX_EXAMPLES,
        outside=[x for x in facts if x.positives_outside_pool],
        outside_total=sum(x.positives_outside_pool for x in facts),
        unjudged=sum(x.unjudged_rows for x in facts),
        without_positive=sum(x.queries_without_positive for x in facts),
        deep=deep,
        pool_size=spec.pool.size,
    )


# -- the layout ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayoutRow:
    """One row of the *Layout* table (its notes are the template's, by ``kind``)."""

    kind: str          # corpus, queries, qrels, top_ranked, excluded or a provenance kind
    config: str
    columns: str
    provenance: bool = False


@dataclass(frozen=True)
class LayoutFacts:
    rows: list[LayoutRow]
    corpus_sizes: str             # e.g. ``150`` or ``198–585`` documents
    corpus_shared_per: str        # ``domain`` when subsets share a corpus; empty: one each
    queries: int
    candidates: str               # candidates per query, e.g. ``30–40``
    split_by: str                 # what a provenance split is: domain or subset


def layout_facts(root: Path, spec: SuiteSpec, facts: list[SubsetFacts]) -> LayoutFacts:
    first = spec.subset_names[0]
    rd = open_release(root, suite=spec)
    rows = [LayoutRow("corpus", "`{subset}-corpus`",
                      _cols(list(corpus_file_facts(root, spec, first)[0].columns)))]
    for kind in ("queries", "qrels", "gains", "top_ranked", "excluded"):
        present = [s for s in spec.subset_names if rd.has(s, kind)]
        if not present:
            continue
        name = "`{subset}-" + kind + "`"
        if kind == "excluded":
            name = ", ".join(f"`{s}-excluded`" for s in present)
        rows.append(LayoutRow(kind, name,
                              _cols(_schema_columns(root / subset_file(present[0], kind)))))
    for kind in (*PROVENANCE_KINDS, *OPTIONAL_PROVENANCE_KINDS):
        files = [root / provenance_file(kind, s) for s in spec.provenance_splits
                 if (root / provenance_file(kind, s)).exists()]
        if files:
            rows.append(LayoutRow(kind, f"`{PROVENANCE_CONFIG[kind]}`",
                                  _cols(_schema_columns(files[0])), provenance=True))
    sizes = sorted({x.corpus for x in facts})
    return LayoutFacts(
        rows=rows,
        corpus_sizes=_span(sizes[0], sizes[-1]),
        corpus_shared_per=("" if spec.corpus.layout == "per-subset"
                           else spec.corpus.layout.replace("per-", "")),
        queries=sum(x.queries for x in facts),
        candidates=_span(min(x.candidates_min for x in facts),
                         max(x.candidates_max for x in facts)),
        split_by="domain" if spec.corpus.provenance_split == "domain" else "subset",
    )


# -- how the pool was built ----------------------------------------------------------------------
@dataclass(frozen=True)
class StageACounts:
    """The Stage A reading counts the calibration recorded in its item parameters."""

    windows: int
    used: int
    fallback: int
    left_out: int
    unreadable: int
    partial: int


@dataclass(frozen=True)
class StageAFacts:
    rows: int                       # tournament rows shipped
    rule: str | None                # the reading rule the calibration recorded
    counts: StageACounts | None


@dataclass(frozen=True)
class PoolFacts:
    """The numbers of *How the pool was built*."""

    first_stage: FirstStage
    rule: str                       # the spec's pool rule
    size: int
    per_query: str                  # documents per query, e.g. ``30–40``
    injected: int
    pairs: int
    judged: int
    verdict_rows: int
    stage_a: StageAFacts | None
    # fixed candidate lists: (subset, query, graded documents its list leaves out), as the
    # build manifest recorded them
    graded_outside: tuple[tuple[str, str, int], ...] = ()

    @property
    def graded_outside_total(self) -> int:
        return sum(n for _s, _q, n in self.graded_outside)


def graded_outside_pools(manifest: BuildManifest | None, subsets: Sequence[str]
                         ) -> tuple[tuple[str, str, int], ...]:
    """``(subset, query, n)`` for each query whose fixed candidate list leaves out ``n``
    graded documents (the build manifest's ``graded_outside_pool_queries``), in subset order."""
    out = []
    for subset in subsets:
        per_query = ((manifest.counts.get(subset) or {}) if manifest else {}).get(
            "graded_outside_pool_queries") or {}
        out += [(subset, str(q), int(n)) for q, n in per_query.items() if int(n)]
    return tuple(out)


def pool_facts(spec: SuiteSpec, facts: list[SubsetFacts], rd: Release, card_facts: CardFacts,
               *, synthetic: bool, origins: PartOrigins | None = None) -> PoolFacts:
    has_first = all(rd.has_provenance("first_stage", s) for s in spec.provenance_splits)
    origins = origins or part_origins(spec, rd.manifest, synthetic=synthetic)
    crit_rows = sum(pq.read_metadata(rd.root / provenance_file("judge_criteria", s)).num_rows
                    for s in spec.provenance_splits
                    if rd.has_provenance("judge_criteria", s))
    return PoolFacts(
        first_stage=first_stage(spec, card_facts, synthetic=synthetic, has_runs=has_first,
                                records=rd.manifest.first_stage if rd.manifest else (),
                                recorded=origins.recorded,
                                data_generated=origins.data_generated),
        rule=spec.pool.rule,
        size=spec.pool.size,
        per_query=_span(min(x.pool_min for x in facts), max(x.pool_max for x in facts)),
        injected=sum(x.gt_injected for x in facts),
        pairs=sum(x.pool_pairs for x in facts),
        judged=sum(x.judged for x in facts),
        verdict_rows=crit_rows,
        stage_a=stage_a_facts(spec, rd),
        graded_outside=graded_outside_pools(rd.manifest, spec.subset_names),
    )


def _stage_a_counts(params_path: Path) -> StageACounts | None:
    """The Stage A reading counts the calibration recorded in its item parameters, if any."""
    if not params_path.is_file():
        return None
    try:
        reading = json.loads(params_path.read_text(encoding="utf-8")).get("reading") or {}
    except (json.JSONDecodeError, AttributeError):
        return None
    counts = reading.get("stage_a") if isinstance(reading, dict) else None
    if not (isinstance(counts, dict) and "windows_total" in counts):
        return None
    cause = counts.get("windows_left_out_by_cause", {})
    return StageACounts(windows=int(counts["windows_total"]), used=int(counts["windows_used"]),
                        fallback=int(counts.get("windows_fallback") or 0),
                        left_out=int(counts["windows_left_out"]),
                        unreadable=int(cause.get("unreadable", 0)),
                        partial=int(cause.get("partial", 0)))


def stage_a_facts(spec: SuiteSpec, rd: Release) -> StageAFacts | None:
    """The Stage A answers shipped, the reading rule, the counts (None without answers)."""
    splits = [s for s in spec.provenance_splits if rd.has_provenance("judge_tournament", s)]
    if not splits:
        return None
    rows = sum(pq.read_metadata(rd.root / provenance_file("judge_tournament", s)).num_rows
               for s in splits)
    calibration = rd.manifest.calibration if rd.manifest else None
    rule = calibration.reading_rules.get("stage_a") if calibration else None
    counts = _stage_a_counts(rd.root / (calibration.item_params if calibration else ""))
    return StageAFacts(rows=rows, rule=rule or None, counts=counts)


# -- data notes ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SourceNotes:
    """What the source reader recorded about the upstream data at build time."""

    repaired: int = 0                       # passages whose text was repaired
    documents: int = 0                      # of this many (0: no repair recorded)
    repaired_percent: float = 0.0
    empty: int = 0                          # empty documents upstream
    empty_in: tuple[str, ...] = ()
    self_same: int = 0                      # queries excluding their own id
    self_copies: int = 0                    # ... and a copy under another id
    repeats: int = 0                        # repeated ids in upstream exclusion lists
    repeats_in: tuple[str, ...] = ()
    domains: bool = False                   # the reader recorded per-domain counts
    empty_ocr: tuple[tuple[str, int], ...] = ()   # (domain, pages), most first
    identical_groups: int = 0
    identical_pages: int = 0
    identical_differ: int = 0


@dataclass(frozen=True)
class DataNotes:
    judge_models: list[str]
    pool_pairs: int
    queries: int
    source: SourceNotes
    synthetic: bool


def data_notes(spec: SuiteSpec, facts: list[SubsetFacts], rd: Release, *,
               synthetic: bool = False) -> DataNotes:
    judge_models: set[str] = set()
    for s in spec.provenance_splits:
        # only the row groups that can hold a judge run are read (is_judge statistics)
        judged = pq.read_table(rd.root / provenance_file("runs", s), columns=["model"],
                               filters=[("is_judge", "=", True)])
        judge_models |= set(pc.unique(judged["model"]).to_pylist())
    return DataNotes(judge_models=sorted(judge_models),
                     pool_pairs=sum(x.pool_pairs for x in facts),
                     queries=sum(x.queries for x in facts),
                     source=source_notes(rd.manifest), synthetic=synthetic)


def _sum_counts(manifest: BuildManifest | None, key: str) -> tuple[int, tuple[str, ...]]:
    """Total of a per-subset source count in the build manifest, and the subsets that have it."""
    total, where = 0, []
    for subset, counts in (manifest.counts if manifest else {}).items():
        value = counts.get(key)
        if isinstance(value, int) and value:
            total += value
            where.append(subset)
    return total, tuple(where)


def source_notes(manifest: BuildManifest | None) -> SourceNotes:
    """Notes about the upstream data, from what the source reader recorded at build time."""
    sources = manifest.sources if manifest else {}
    repair = (sources.get("corpus") or {}).get("repair") or {}
    docs = (sources.get("corpus") or {}).get("documents")
    repaired = {}
    if repair.get("changed_vs_raw") is not None and docs:
        changed = int(repair["changed_vs_raw"])
        repaired = {"repaired": changed, "documents": int(docs),
                    "repaired_percent": 100 * changed / int(docs)}
    empty, empty_in = _sum_counts(manifest, "empty_documents")
    same, _ = _sum_counts(manifest, "self_argument_same_id")
    copies, _ = _sum_counts(manifest, "self_argument_copies")
    repeats, repeats_in = _sum_counts(manifest, "excluded_repeats")
    domains = sources.get("domains") or {}
    ocr = {}
    if domains:
        empty_ocr = {d: n["empty_ocr_pages"] for d, n in domains.items()
                     if n.get("empty_ocr_pages")}
        ocr = {
            "empty_ocr": tuple(sorted(empty_ocr.items(), key=lambda kv: -kv[1])),
            "identical_groups": sum(n.get("identical_ocr_groups", 0) for n in domains.values()),
            "identical_pages": sum(n.get("identical_ocr_pages", 0) for n in domains.values()),
            "identical_differ": sum(n.get("identical_ocr_groups_with_different_qrels", 0)
                                    for n in domains.values()),
        }
    return SourceNotes(**repaired, empty=empty, empty_in=empty_in, self_same=same,
                       self_copies=copies, repeats=repeats, repeats_in=repeats_in,
                       domains=bool(domains), **ocr)


def render_release_texts(root: Path, *, spec: SuiteSpec | None = None,
                         history: History | None = None, repo: str | None = None,
                         results: dict[tuple[str, str, int], ReplayResult] | None = None
                         ) -> dict[str, str]:
    """The card and task file of a release directory: ``{path: text}`` (nothing written).
    ``results``: see :func:`render_card`."""
    from rcp_data.documents.taskfile import release_prompts, render_task_file

    root = Path(root)
    spec = spec or release_spec(root)
    history = history or release_history(root, spec, repo=repo)
    repo = repo or history.repo
    releases = [r.to_dict() for r in history.releases]
    return {
        CARD_FILE: render_card(root, spec=spec, history=history, repo=repo, results=results),
        TASK_FILE: render_task_file(spec, releases, repo=repo, prompts=release_prompts(root)),
    }


def write_release_files(root: Path, **kwargs) -> list[Path]:
    """Render and write ``README.md`` and ``rcp_ndcg_tasks.py`` into ``root``."""
    written = []
    for rel, text in render_release_texts(root, **kwargs).items():
        path = Path(root) / rel
        atomic_write_text(path, text)
        written.append(path)
        log.info("wrote %s (%d bytes)", path, len(text.encode("utf-8")))
    return written


__all__ = [
    "ADDED_CONFIGS", "ADDED_SECTIONS", "DataNotes", "LayoutFacts", "LayoutRow", "PoolFacts",
    "ProtocolFacts", "RuleDistance", "SourceNotes", "StageAFacts", "StageACounts",
    "SyntheticFacts", "TieEffect", "ViewGap", "at_main_k", "card_data", "card_environment", "check_card",
    "parse_card_data",
    "config_entries", "data_notes", "layout_facts", "paper_rule_distances", "pool_facts",
    "metrics_shown", "protocol_facts", "release_history", "render_card", "render_release_texts",
    "replay_results", "source_notes", "stage_a_facts", "suite_tag",
    "synthetic_facts", "tie_effects", "view_gaps", "views_shown", "write_release_files",
]
