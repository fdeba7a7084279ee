"""Render a release's dataset card (``README.md``) from its data and release history.

Every number in the card is computed here from the release directory (tables, item parameters,
runs replayed by :mod:`rcp_data.scoring.replay`) or taken from the release history; the prose lives in
``templates/card.md.j2``. Rendering is deterministic: the same release gives the same bytes.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
from huggingface_hub import DatasetCard, DatasetCardData

from rcp_data.core.errors import InputError
from rcp_data.core.gains import ItemParams
from rcp_data.core.io import atomic_write_text
from rcp_data.core.specs import RULE_LETTERS, RULE_NAMES, SHOWN_TIE_RULES, SuiteSpec
from rcp_data.documents.card_facts import (
    CardFacts,
    citation_text,
    copied_self_documents,
    deep_queries,
    example_text,
    first_stage_step,
    instruction_line,
    judge_lines,
    licence_lines,
    paper_relation,
)
from rcp_data.documents.releases_md import render_release_table
from rcp_data.documents.taskfile import families, has_ocr_view, task_name, template_text
from rcp_data.model.card_format import (
    CARD_K,
    CARD_METRICS,
    metric_label,
    render_markdown_table,
    table_title,
    view_heading,
)
from rcp_data.model.history import (
    History,
    ReleaseRecord,
    calibration_record,
    judge_slug,
    read_history,
    release_tag,
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
from rcp_data.model.release import Release, corpus_file_facts, release_is_synthetic
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
METRICS_SHOWN = tuple((metric, metric_label(metric)) for metric in CARD_METRICS)
BASE_TAGS = ("mteb", "retrieval", "reranking", "rcp-ndcg", "graded-relevance", "llm-judge")
SUBSET_CONFIG_KINDS = ("corpus", "queries", "qrels", "top_ranked", "excluded")


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


def _n(value: int) -> str:
    return f"{int(value):,}"


def _span(low: int, high: int) -> str:
    """``150`` when every value is the same, else ``198–585``."""
    return _n(low) if low == high else f"{_n(low)}–{_n(high)}"


def suite_tag(spec: SuiteSpec) -> str:
    """The tag naming the suite (``rcp_data.model.suite.detect_suite`` reads it back)."""
    return spec.name.replace("_", "-")


# -- release history ---------------------------------------------------------------------------
def release_history(root: Path, spec: SuiteSpec, *, repo: str | None = None) -> History:
    """The release's history: its ``provenance/releases.json``, else a first release built
    from the build manifest (the commit that will hold it is not known yet)."""
    path = Path(root) / RELEASES_JSON
    if path.exists():
        return read_history(path)
    manifest = Release(Path(root), spec).manifest()
    judge = manifest.get("judge")
    calibration = manifest.get("calibration")
    if not judge or not calibration:
        raise InputError(f"neither {RELEASES_JSON} nor a build manifest with 'judge' and "
                         "'calibration'", path=str(Path(root) / BUILD_MANIFEST))
    release = ReleaseRecord(
        release=1,
        tag=release_tag(1, judge["model"]),
        revision=None,
        data_revision=None,
        judge={"model": judge["model"], "revision": judge.get("revision")},
        calibration=calibration_record(calibration),
        status="current",
    )
    return History(repo=repo or spec.repo, releases=(release,))


# -- front matter ------------------------------------------------------------------------------
def config_entries(root: Path, spec: SuiteSpec) -> list[dict]:
    """``configs:`` of the card: every subset table and every provenance table present."""
    root = Path(root)
    configs = []
    for s in spec.subset_names:
        for kind in SUBSET_CONFIG_KINDS:
            if kind == "corpus":
                corpus_file_facts(root, spec, s)  # raises when the corpus is missing
                path = corpus_pattern(spec, s)
            else:
                path = subset_file(s, kind)
                if not (root / path).exists():
                    if kind == "excluded":
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


# -- facts from the data -----------------------------------------------------------------------
@dataclass
class SubsetFacts:
    name: str
    queries: int
    corpus: int
    pool_pairs: int
    gt_injected: int
    judged: int
    pool_min: int
    pool_max: int
    excluded_docs: int
    queries_with_exclusions: int
    positives_outside_pool: int
    unjudged_rows: int
    queries_without_positive: int
    queries_with_more_positives_than_pool: int
    candidates_min: int = 0          # top_ranked list lengths (the pool minus exclusions)
    candidates_max: int = 0


def all_subset_facts(rd: Release) -> list[SubsetFacts]:
    """Facts of every subset, reading each provenance pool once."""
    pools: dict[str, pd.DataFrame] = {}
    out = []
    for s in rd.spec.subset_names:
        split = rd.spec.provenance_split(s)
        if split not in pools:
            pools = {split: rd.provenance("pool", split)}
        out.append(subset_facts(rd, s, pool=pools[split]))
    return out


def _pairs(queries: pd.Series, docs: pd.Series) -> pd.MultiIndex:
    """(query, document) pairs as a MultiIndex of plain strings (vectorized membership)."""
    return pd.MultiIndex.from_arrays([queries.astype(object), docs.astype(object)])


def subset_facts(rd: Release, subset: str, *, pool: pd.DataFrame | None = None
                 ) -> SubsetFacts:
    """Counts of one subset, computed from its tables (``pool``: its provenance pool table)."""
    spec = rd.spec
    positive = int(spec.source.get("grade_positive", 1))
    queries = rd.table(subset, "queries", columns=["id"])
    corpus_rows = sum(f.rows for f in corpus_file_facts(rd.root, spec, subset))
    qrels = rd.table(subset, "qrels", columns=["query-id", "corpus-id", "score", "theta"])
    excluded = (rd.table(subset, "excluded").explode("excluded-corpus-ids").dropna()
                if rd.has(subset, "excluded") else pd.DataFrame(columns=["query-id",
                                                                        "excluded-corpus-ids"]))
    ex_pairs = _pairs(excluded["query-id"], excluded["excluded-corpus-ids"]).unique()
    split = spec.provenance_split(subset)
    pool = rd.provenance("pool", split) if pool is None else pool
    qids = set(queries["id"])
    pool = pool[pool["query-id"].isin(qids)]
    sizes = pool.groupby("query-id").size()
    keys = _pairs(qrels["query-id"], qrels["corpus-id"])
    is_excluded = np.asarray(keys.isin(ex_pairs), dtype=bool)
    outside = ~np.asarray(keys.isin(_pairs(pool["query-id"], pool["corpus-id"])), dtype=bool)
    pos = (qrels["score"].to_numpy() >= positive) & ~is_excluded
    with_pos = set(qrels.loc[pos, "query-id"])
    n_pos = qrels.loc[pos].groupby("query-id").size()
    top = pq.read_table(rd.root / subset_file(subset, "top_ranked"), columns=["corpus-ids"])
    lengths = pc.list_value_length(top.column("corpus-ids")).to_numpy(zero_copy_only=False)
    return SubsetFacts(
        name=subset,
        queries=len(queries),
        corpus=int(corpus_rows),
        pool_pairs=len(pool),
        gt_injected=int(pool["gt_injected"].sum()),
        judged=int(pool["judged"].sum()) if "judged" in pool else len(pool),
        pool_min=int(sizes.min()) if len(sizes) else 0,
        pool_max=int(sizes.max()) if len(sizes) else 0,
        excluded_docs=len(ex_pairs),
        queries_with_exclusions=int(excluded["query-id"].nunique()),
        positives_outside_pool=int((pos & outside).sum()),
        unjudged_rows=int(qrels["theta"].isna().sum()),
        queries_without_positive=len(qids - with_pos),
        queries_with_more_positives_than_pool=int((n_pos > spec.pool.size).sum()),
        candidates_min=int(lengths.min()) if len(lengths) else 0,
        candidates_max=int(lengths.max()) if len(lengths) else 0,
    )


def _schema_columns(path: Path) -> list[str]:
    return list(pq.read_schema(path).names)


def _cols(names: list[str]) -> str:
    return ", ".join(f"`{c}`" for c in names)


# -- replayed tables ---------------------------------------------------------------------------
def views_shown(spec: SuiteSpec) -> list[tuple[str, str | None]]:
    """Views of the results section (``spec.card_views``): ``(view, heading)``."""
    return [(view, view_heading(spec, view)) for view in spec.card_views]


def replay_results(root: Path, spec: SuiteSpec) -> dict[tuple[str, str], ReplayResult]:
    """Replayed tables per ``(view, tie_rule)`` (judge runs left out), from one load: the shown
    rules, and the suite's paper rule when it is not one of them."""
    data = load_release(root, spec)
    rules = list(SHOWN_TIE_RULES)
    if spec.paper_tie_rule not in rules:
        rules.append(spec.paper_tie_rule)
    return {(view, rule): replay_loaded(data, k=CARD_K, tie_rule=rule, view=view)
            for view, _ in views_shown(spec) for rule in rules}


def _cell_diffs(results: dict[tuple[str, str], ReplayResult], view: str, metric: str,
                rule_a: str, rule_b: str) -> list[float]:
    """Per-cell differences (points) of two tie rules' tables, Mean column left out."""
    a = results[(view, rule_a)].to_json()["metrics"][metric]
    b = results[(view, rule_b)].to_json()["metrics"][metric]
    return [100.0 * (a[m][c] - b[m][c]) for m in a for c in a[m]
            if c != "mean" and a[m][c] is not None and b.get(m, {}).get(c) is not None]


def tie_effect_lines(spec: SuiteSpec, results: dict[tuple[str, str], dict]) -> list[str]:
    """Max |(a) - (b)| and mean (a) - (b) per cell, in points, per view and metric."""
    lines = []
    for view, heading in views_shown(spec):
        for metric, label in METRICS_SHOWN:
            diffs = _cell_diffs(results, view, metric, "doc-id", "group-mean")
            if not diffs:
                continue
            where = f" ({view} view)" if heading else ""
            lines.append(f"{label}{where}: (a) and (b) differ by at most "
                         f"{max(abs(d) for d in diffs):.2f} points per cell; (a) minus (b) "
                         f"is {np.mean(diffs):+.3f} points on average over {len(diffs)} cells.")
    return lines


def view_gap_lines(spec: SuiteSpec, results: dict[tuple[str, str], ReplayResult]) -> list[str]:
    """Suites with languages: how far the mteb task score (mean of the language subsets) lies
    from the native-language score, per cell under the suite's reference rule (b when its
    rule is not shown), in points."""
    if not spec.has_languages:
        return []
    rule = spec.paper_tie_rule if spec.paper_tie_rule in SHOWN_TIE_RULES else "group-mean"
    letter = RULE_LETTERS[rule]
    lines = []
    for metric, label in METRICS_SHOWN:
        lang = results[("languages", rule)].to_json()["metrics"][metric]
        native = results[("native", rule)].to_json()["metrics"][metric]
        diffs = [100.0 * (lang[m][c] - native[m][c]) for m in lang for c in lang[m]
                 if c != "mean" and lang[m][c] is not None
                 and native.get(m, {}).get(c) is not None]
        if diffs:
            lines.append(f"{label}, rule ({letter}): the mean over the languages minus "
                         f"the native-language score is {np.mean(diffs):+.2f} points on "
                         f"average over {len(diffs)} cells (per cell {min(diffs):+.2f} to "
                         f"{max(diffs):+.2f}).")
    return lines


# -- the card ----------------------------------------------------------------------------------
def render_card(root: Path, *, spec: SuiteSpec | None = None, history: History | None = None,
                repo: str | None = None,
                results: dict[tuple[str, str], ReplayResult] | None = None) -> str:
    """The card of the release directory ``root`` (text of ``README.md``)."""
    root = Path(root)
    spec = spec or release_spec(root)
    history = history or release_history(root, spec, repo=repo)
    repo = repo or history.repo
    current = history.current
    if current is None:
        raise InputError("the release history has no current release", path=str(root))
    rd = Release(root, spec)
    synthetic = (release_is_synthetic(root, synthetic_suite=spec.synthetic)
                 or current.synthetic)
    facts_card = CardFacts.of(spec)
    facts = all_subset_facts(rd)
    item_params = ItemParams.read(root / current.item_params)
    fams = families(spec)
    number = current.release
    # ``results``: the release's replay_results, when the caller has them already
    results = results if results is not None else replay_results(root, spec)
    models = sorted({m for r in results.values() for m in r.models})
    pinned = current.data_revision or current.revision
    revision_text = (f"revision `{pinned}`" if pinned
                     else f"this revision (the commit tagged `{current.tag}`)")
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
        "revision_text": revision_text,
        "paper_rule": paper_rule_text(spec, results),
        "upstream_name": "" if spec.synthetic else facts_card.upstream.get("name", ""),
    }
    sections = []
    for view, heading in views_shown(spec):
        tables = []
        for metric, _label in METRICS_SHOWN:
            for rule in SHOWN_TIE_RULES:
                table = results[(view, rule)].tables[metric]
                tables.append({"caption": table_title(metric, CARD_K, rule),
                               "markdown": render_markdown_table(table, spec)})
        sections.append({"heading": heading, "tables": tables})
    paper_view = spec.paper_view if spec.paper_view in spec.card_views else spec.card_views[0]
    paper_tables = results[(paper_view, spec.paper_tie_rule)].tables
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    body = env.from_string(template_text("card.md.j2")).render(
        spec=spec, f=f, facts=facts_card, repo=repo, task_file=TASK_FILE,
        releases_json=RELEASES_JSON, title=card_title(spec, synthetic), synthetic=synthetic,
        synthetic_what=synthetic_what(spec, rd),
        judge_lines=judge_lines(facts_card),
        release_table=render_release_table(history, link_judges=not synthetic).rstrip("\n"),
        release_notes=release_notes(spec, history),
        protocol=protocol_lines(spec, facts, rd),
        layout=layout_rows(root, spec, facts),
        instructions=instruction_line(spec, facts_card, rd),
        pool_steps=pool_steps(spec, facts, rd, facts_card, synthetic=synthetic),
        data_notes=data_notes(spec, facts, rd, synthetic=synthetic),
        results=sections,
        paper_relation=paper_relation(spec, paper_tables, history, synthetic=synthetic),
        tie_effect=tie_effect_lines(spec, results),
        view_gap=view_gap_lines(spec, results),
        reranker_map=", ".join(f"{spec.short_name(m)} = `{m}`"
                               for m in model_order(spec, models)),
        licence=licence_lines(spec, facts_card, synthetic=synthetic),
        citation=citation_text(facts_card, spec),
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


def synthetic_what(spec: SuiteSpec, rd: Release) -> str:
    """What of a synthetic release was generated, from its build manifest."""
    manifest = rd.manifest()
    judge = (manifest.get("judge") or {}).get("model", "")
    if spec.synthetic or (manifest.get("sources") or {}).get("synthetic") is True:
        return ("Every corpus, query, label, judge verdict, reranker score and gain in this "
                "repository was generated from fixed random seeds.")
    return ("Its judge verdicts, first-stage runs and reranker scores were generated from "
            f"fixed random seeds (judge `{judge}`), and so are its gains.")


def check_card(text: str, data: DatasetCardData) -> None:
    """Parse the card back with huggingface_hub's card classes; refuse a mismatch."""
    parsed = DatasetCard(text)
    if parsed.data.to_dict() != data.to_dict():
        raise InputError("the rendered card's YAML does not parse back to its card data")
    for key in ("configs", "license", "tags", "pretty_name"):
        if not parsed.data.to_dict().get(key):
            raise InputError(f"the rendered card has no {key!r}")


def paper_rule_text(spec: SuiteSpec, results: dict[tuple[str, str], ReplayResult]) -> str:
    """The suite's paper rule; one the card does not show (pool order) comes with its largest
    per-cell distance to rule (b), computed from the replay (a particular tie order need not
    lie between (a) and (b))."""
    rule = spec.paper_tie_rule
    if rule == "doc-id":
        return "(a), the document-id tie-break"
    if rule == "group-mean":
        return "(b), group-mean gains for ties"
    parts = []
    for view, heading in views_shown(spec):
        for metric, label in METRICS_SHOWN:
            diffs = _cell_diffs(results, view, metric, rule, "group-mean")
            if diffs:
                where = f" ({view} view)" if heading else ""
                parts.append(f"{max(abs(d) for d in diffs):.2f} points on {label}{where}")
    distance = (f"; per cell it differs from (b) by at most {' and '.join(parts)}"
                if parts else "")
    return ("(c), pool order (ties keep their `top_ranked` order), whose tables are not shown "
            f"here{distance}")


def release_notes(spec: SuiteSpec, history: History) -> list[str]:
    cur = history.current
    assert cur is not None
    lines = []
    if cur.data_revision:
        lines.append(f"The data (corpus, queries, qrels with `gain` and `theta`, pools and "
                     f"provenance) was last changed in commit `{cur.data_revision[:8]}`. Later "
                     "commits change only this card, the task file and "
                     f"`{RELEASES_JSON}`, so every revision since loads the same data.")
    else:
        lines.append(f"The data of release {cur.release} lives in this revision, the commit "
                     f"tagged `{cur.tag}`, together with this card, `{TASK_FILE}` and "
                     f"`{RELEASES_JSON}`. Until a later card update writes in its sha, the "
                     "task file pins the tag.")
    for r in history.releases:
        if r.status == "superseded":
            where = f"`{r.revision}`" if r.revision else "its tag"
            lines.append(f"Release {r.release} (`{r.tag}`) was superseded by release "
                         f"{r.superseded_by}; it stays loadable at {where}: "
                         f"`rcp.get_tasks(revision=\"{r.tag}\")`.")
    if spec.task_versioning == "suffix":
        lines.append("A new judge or a recalibration makes a new release: a new commit and tag "
                     "`v<N>-<judge slug>`, and task names ending in `.v<N>`; the tasks of the "
                     "release before are marked `superseded_by`.")
    else:
        lines.append("A new judge or a recalibration makes a new release: a new commit and tag "
                     "`v<N>-<judge slug>`. This suite keeps its task names across releases "
                     "(they are not in mteb yet); pin a release with `revision=`.")
    lines.append("Releases are only ever added: no commit is rewritten and no tag moved. "
                 f"`{RELEASES_JSON}` holds this table in machine-readable form.")
    return lines


def protocol_lines(spec: SuiteSpec, facts: list[SubsetFacts], rd: Release) -> list[str]:
    lines = []
    with_ex = [x for x in facts if x.excluded_docs]
    if with_ex:
        parts = ", ".join(f"`{x.name}` {x.queries_with_exclusions} of {x.queries} queries "
                          f"({x.excluded_docs} document{'s' if x.excluded_docs != 1 else ''})"
                          for x in with_ex)
        line = (f"**Exclusions.** Some queries must not retrieve certain documents (e.g. "
                f"the query's own text): {parts}. They are listed in `{{subset}}-excluded` "
                "and removed from the candidates, from every ranking and from both ideal "
                "rankings; `provenance-pool` keeps them with `excluded = true`.")
        copies = copied_self_documents(rd)
        if copies:
            where = ", ".join(dict.fromkeys(f"`{s}`" for s, _q, _d in copies))
            line += (f" {len(copies)} excluded document{'s are' if len(copies) != 1 else ' is'} "
                     f"filed under another id than the query's own ({where}), which a rule "
                     f"that drops only the query's own id would miss: {example_text(copies)}.")
        lines.append(line)
    else:
        lines.append("**Exclusions.** No query of this release excludes documents.")
    outside = sum(x.positives_outside_pool for x in facts)
    if outside:
        parts = ", ".join(f"`{x.name}` {x.positives_outside_pool}" for x in facts
                          if x.positives_outside_pool)
        lines.append(f"**Positives outside the pool.** {outside} human-labelled positives are "
                     f"not in the judged pool ({parts}). They keep their `score`, have "
                     "`gain = 0.0` and `theta = null`, and count in qrel-nDCG's ideal ranking "
                     "only.")
    else:
        lines.append("**Positives outside the pool.** None: every human-labelled positive is "
                     "in the judged pool.")
    unjudged = sum(x.unjudged_rows for x in facts)
    lines.append(f"**Rows without a judgment.** {unjudged} qrels rows have `theta = null` "
                 "(labelled documents outside the pool, or excluded ones); their `gain` is 0.")
    no_pos = sum(x.queries_without_positive for x in facts)
    if no_pos:
        verb = "queries have" if no_pos != 1 else "query has"
        lines.append(f"**Queries without a positive label.** {no_pos} {verb} no labelled "
                     "positive. RCP-nDCG scores such a query like any other; the qrel-nDCG "
                     "tables below leave it out, and so does mteb (2.x drops queries without "
                     "a positive label before scoring, `ndcg_float_at_10` included).")
    deep = deep_queries(rd, int(spec.source.get("grade_positive", 1)))
    if deep:
        parts = "; ".join(f"`{s}`: " + ", ".join(f"`{q}`" for q in qs) for s, qs in deep.items())
        lines.append(f"**More positives than the pool holds** ({spec.pool.size}): {parts}. "
                     "These queries are scored on their judged pool like every other; their "
                     "positives beyond it stay outside `top_ranked` and count in qrel-nDCG's "
                     "ideal ranking only.")
    return lines


def layout_rows(root: Path, spec: SuiteSpec, facts: list[SubsetFacts]) -> list[dict]:
    first = spec.subset_names[0]
    rd = Release(root, spec)
    rows = []
    corpus_note = (f"one copy per {spec.corpus.layout.replace('per-', '')}, shared by its "
                   "subsets" if spec.corpus.layout != "per-subset" else "one per subset")
    sizes = sorted({x.corpus for x in facts})
    size_text = _span(sizes[0], sizes[-1])
    rows.append({"config": "`{subset}-corpus`",
                 "columns": _cols(list(corpus_file_facts(root, spec, first)[0].columns)),
                 "notes": f"{size_text} documents; {corpus_note}"})
    pool_span = _span(min(x.candidates_min for x in facts),
                      max(x.candidates_max for x in facts))
    notes = {"queries": f"{_n(sum(x.queries for x in facts))} queries in all",
             "qrels": "`score`: upstream label; `gain`: calibrated probability; `theta`: its "
                      "latent relevance",
             "top_ranked": f"the judged pool ({pool_span} candidates per query)",
             "excluded": "documents a query must not retrieve"}
    for kind in ("queries", "qrels", "top_ranked", "excluded"):
        present = [s for s in spec.subset_names if rd.has(s, kind)]
        if not present:
            continue
        name = "`{subset}-" + kind + "`"
        if kind == "excluded":
            name = ", ".join(f"`{s}-excluded`" for s in present)
        rows.append({"config": name,
                     "columns": _cols(_schema_columns(root / subset_file(present[0], kind))),
                     "notes": notes[kind]})
    prov_notes = {"pool": "pool order, fused score, injection, exclusion and judging flags",
                  "first_stage": "each retriever's run and the fused one (`rrf_fused`)",
                  "runs": "every reranker's score for every candidate",
                  "judge_criteria": "the judge's raw per-call criterion verdicts",
                  "judge_tournament": "the judge's raw Stage A answers: one row per document "
                                      "shown in a listwise window (`phase`, `position` as "
                                      "shown, `judge_rank` and `score` in [-5, 5] as "
                                      "answered, null when missing)",
                  "judge_bt": "the Stage A Bradley-Terry scores `theta_bt` fitted from "
                              "`provenance-judge-tournament` (centred per query), the input "
                              "of the 2PL fit"}
    split_by = "domain" if spec.corpus.provenance_split == "domain" else "subset"
    for kind in (*PROVENANCE_KINDS, *OPTIONAL_PROVENANCE_KINDS):
        files = [root / provenance_file(kind, s) for s in spec.provenance_splits
                 if (root / provenance_file(kind, s)).exists()]
        if files:
            rows.append({"config": f"`{PROVENANCE_CONFIG[kind]}`",
                         "columns": _cols(_schema_columns(files[0])),
                         "notes": f"split = {split_by}; {prov_notes[kind]}"})
    return rows


def pool_steps(spec: SuiteSpec, facts: list[SubsetFacts], rd: Release,
               card_facts: CardFacts, *, synthetic: bool) -> list[str]:
    pairs = sum(x.pool_pairs for x in facts)
    injected = sum(x.gt_injected for x in facts)
    judged = sum(x.judged for x in facts)
    has_first = all(rd.has_provenance("first_stage", s) for s in spec.provenance_splits)
    steps = [first_stage_step(spec, card_facts, synthetic=synthetic, has_runs=has_first)]
    if spec.pool.rule == "top-k-union-judged":
        steps.append(f"**Pool.** The fused top {spec.pool.size} of each query plus every "
                     "upstream-judged document after them, in fused order "
                     f"({_span(min(x.pool_min for x in facts), max(x.pool_max for x in facts))} "
                     f"documents per query). Of the added documents, {_n(injected)} are "
                     "positives (`gt_injected`).")
    else:
        steps.append(f"**Pool.** The fused top {spec.pool.size} of each query. Each labelled "
                     "positive the fusion missed replaces the lowest-ranked non-relevant "
                     f"candidate: {_n(injected)} of {_n(pairs)} pool pairs are such injected "
                     "positives (`gt_injected = true`, `rrf_score = 0`).")
    crit_rows = sum(pq.read_metadata(rd.root / provenance_file("judge_criteria", s)).num_rows
                    for s in spec.provenance_splits
                    if rd.has_provenance("judge_criteria", s))
    steps.append(f"**Judging.** {_n(judged)} pool pairs were judged: a listwise tournament, "
                 f"then pointwise binary criteria ({_n(crit_rows)} verdict rows in "
                 "`provenance-judge-criteria`), then the 2PL fit that gives `theta`.")
    step_a = tournament_step(spec, rd)
    if step_a:
        steps.append(step_a)
    return steps


def _stage_a_counts(params_path: Path) -> dict:
    """The Stage A reading counts the calibration recorded in its item parameters, if any."""
    if not params_path.is_file():
        return {}
    try:
        reading = json.loads(params_path.read_text(encoding="utf-8")).get("reading") or {}
    except (json.JSONDecodeError, AttributeError):
        return {}
    counts = reading.get("stage_a") if isinstance(reading, dict) else None
    return counts if isinstance(counts, dict) and "windows_total" in counts else {}


def tournament_step(spec: SuiteSpec, rd: Release) -> str:
    """The Stage A paragraph: the answers shipped, the reading rule, the refit they allow."""
    splits = [s for s in spec.provenance_splits if rd.has_provenance("judge_tournament", s)]
    if not splits:
        return ""
    rows = sum(pq.read_metadata(rd.root / provenance_file("judge_tournament", s)).num_rows
               for s in splits)
    calibration = rd.manifest().get("calibration") or {}
    rule = (calibration.get("reading_rules") or {}).get("stage_a")
    read = (f" The answers were read with the `{rule}` rule" + (
        ": a window enters only if every document it shows has a score in [-5, 5] and a "
        "rank." if rule == "complete" else ": as `complete`, plus windows without readable "
        "scores but with a complete ranking, as hard preferences of weight 1."
        if rule == "hard-fallback" else ".")) if rule else ""
    counts = _stage_a_counts(rd.root / str(calibration.get("item_params", "")))
    if counts:
        fallback = (f" ({_n(counts['windows_fallback'])} as hard preferences)"
                    if counts.get("windows_fallback") else "")
        cause = counts.get("windows_left_out_by_cause", {})
        read += (f" Of {_n(counts['windows_total'])} windows, {_n(counts['windows_used'])} "
                 f"entered{fallback} and {_n(counts['windows_left_out'])} were left out "
                 f"({_n(cause.get('unreadable', 0))} unreadable, "
                 f"{_n(cause.get('partial', 0))} partial).")
    return (f"**Stage A.** `provenance-judge-tournament` holds the judge's {_n(rows)} tournament "
            "rows (one per document shown in a window) and `provenance-judge-bt` the "
            "Bradley-Terry scores fitted from them (soft preferences from every pair of a "
            "window, weight 2/w; ridge 1e-4; L-BFGS, at most 250 iterations per query)."
            f"{read} Both fits can be re-run from this revision alone.")


def data_notes(spec: SuiteSpec, facts: list[SubsetFacts], rd: Release, *,
               synthetic: bool = False) -> list[str]:
    judge_models: set[str] = set()
    for s in spec.provenance_splits:
        # only the row groups that can hold a judge run are read (is_judge statistics)
        judged = pq.read_table(rd.root / provenance_file("runs", s), columns=["model"],
                               filters=[("is_judge", "=", True)])
        judge_models |= set(pc.unique(judged["model"]).to_pylist())
    lines = []
    if judge_models:
        names = ", ".join(f"`{m}`" for m in sorted(judge_models))
        lines.append(f"Runs with `is_judge = true` in `provenance-runs` ({names}) are the judge "
                     "itself, not an independent system; the tables leave them out.")
    lines.append(f"{_n(sum(x.pool_pairs for x in facts))} pool pairs over "
                 f"{_n(sum(x.queries for x in facts))} queries; corpus ids compare as strings "
                 "(byte order), never as numbers.")
    lines += source_note_lines(spec, rd.manifest())
    if synthetic:
        lines.append("This release is SYNTHETIC (generated from fixed seeds); see the notice "
                     "at the top.")
    return lines


def _sum_counts(manifest: dict, key: str) -> tuple[int, list[str]]:
    """Total of a per-subset source count in the build manifest, and the subsets that have it."""
    total, where = 0, []
    for subset, counts in manifest.get("counts", {}).items():
        value = counts.get(key)
        if isinstance(value, int) and value:
            total += value
            where.append(subset)
    return total, where


def source_note_lines(spec: SuiteSpec, manifest: dict) -> list[str]:
    """Notes about the upstream data, from what the source reader recorded at build time."""
    lines: list[str] = []
    sources = manifest.get("sources", {})
    repair = (sources.get("corpus") or {}).get("repair") or {}
    docs = (sources.get("corpus") or {}).get("documents")
    if repair.get("changed_vs_raw") is not None and docs:
        changed = int(repair["changed_vs_raw"])
        lines.append(f"**Corpus text.** The text is the repaired text the judge saw: "
                     f"{_n(changed)} of {_n(int(docs))} passages "
                     f"({100 * changed / int(docs):.1f}%) differ from the raw upstream text, "
                     "which read UTF-8 bytes as Latin-1 (double encoding).")
    empty, where = _sum_counts(manifest, "empty_documents")
    if empty:
        lines.append(f"**Empty documents.** {_n(empty)} documents are empty upstream "
                     f"({', '.join(where)}); they enter no pool.")
    same, _ = _sum_counts(manifest, "self_argument_same_id")
    copies, _ = _sum_counts(manifest, "self_argument_copies")
    if same or copies:
        lines.append(f"**Self-documents.** {_n(same)} queries exclude the corpus document with "
                     f"their own id, and {_n(copies)} a byte-identical copy under another id.")
    repeats, where = _sum_counts(manifest, "excluded_repeats")
    if repeats:
        lines.append(f"**Repeated exclusions.** Upstream exclusion lists repeat {_n(repeats)} "
                     f"ids ({', '.join(where)}); each is excluded once.")
    domains = sources.get("domains") or {}
    if domains:
        empty_ocr = {d: n["empty_ocr_pages"] for d, n in domains.items()
                     if n.get("empty_ocr_pages")}
        if empty_ocr:
            lines.append(f"**Empty OCR text.** {_n(sum(empty_ocr.values()))} pages have empty "
                         "OCR text (" + ", ".join(f"{d} {_n(v)}" for d, v in sorted(
                             empty_ocr.items(), key=lambda kv: -kv[1])) + "); a text first "
                         "stage never retrieves them and they enter no pool.")
        groups = sum(n.get("identical_ocr_groups", 0) for n in domains.values())
        if groups:
            pages = sum(n.get("identical_ocr_pages", 0) for n in domains.values())
            differ = sum(n.get("identical_ocr_groups_with_different_qrels", 0)
                         for n in domains.values())
            lines.append(f"**Identical OCR text.** {_n(groups)} groups ({_n(pages)} pages) have "
                         f"byte-identical OCR text; in {_n(differ)} of them the pages carry "
                         "different qrels.")
        lines.append("**Query language.** Each subset's questions are those whose record names "
                     "its language (never inferred from row position).")
    return lines


def render_release_texts(root: Path, *, spec: SuiteSpec | None = None,
                         history: History | None = None, repo: str | None = None,
                         results: dict[tuple[str, str], ReplayResult] | None = None
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
    "ADDED_CONFIGS", "ADDED_SECTIONS", "SubsetFacts", "card_data", "check_card", "config_entries", "release_history",
    "render_card", "render_release_texts", "replay_results", "subset_facts", "suite_tag",
    "view_gap_lines", "views_shown", "write_release_files",
]
