"""The card's facts that are not tables: from the suite spec's ``[card]``, the data, the history.

Each function returns text for one place of ``templates/card.md.j2``; none branches on a
suite's name. Facts of the published suite (its retrievers, a second judge, the upstream
licence) come from the spec's ``[card]`` (``builders/<suite>.toml`` with ``_card.toml``);
examples of each suite's quirks come from the release's own tables; the comparison with the
paper from the replay and ``provenance/paper_values.json``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd
import pyarrow.parquet as pq

from rcp_data import resources
from rcp_data.core.errors import InputError
from rcp_data.core.io import read_json
from rcp_data.core.specs import (
    RULE_LETTERS,
    InstructionsCard,
    RetrieverCard,
    SuiteSpec,
    UpstreamCard,
)
from rcp_data.documents.taskfile import template_text
from rcp_data.model.card_format import CARD_K, metric_label
from rcp_data.model.history import History
from rcp_data.model.layout import subset_file
from rcp_data.model.release import Release

MAX_EXAMPLES = 4


def retriever_markdown(r: RetrieverCard) -> str:
    """A first-stage retriever as the card names it: linked, with its settings."""
    name = f"[{r.name}]({r.url})" if r.url else r.name
    return f"{name} ({r.settings})" if r.settings else name


@dataclass(frozen=True)
class CardFacts:
    """The spec's ``[card]`` (:class:`~rcp_data.core.specs.CardSpec`, checked when the spec is
    read) as the card's template names its facts."""

    retrievers: dict[str, RetrieverCard] = field(default_factory=dict)
    second_judge: str = ""
    judge_note: str = ""
    mteb_pr: int | None = None
    mteb_pr_url: str = ""
    renamed: str = ""
    external_validation: str = ""
    citations: tuple[str, ...] = ()
    upstream: UpstreamCard | None = None
    instructions: InstructionsCard = field(default_factory=InstructionsCard)

    @classmethod
    def of(cls, spec: SuiteSpec) -> CardFacts:
        card = spec.card
        return cls(
            retrievers=dict(card.retrievers),
            second_judge=card.second_judge,
            judge_note=card.judge_note,
            mteb_pr=card.mteb.pr,
            mteb_pr_url=card.mteb.pr_url,
            renamed=card.mteb.renamed,
            external_validation=card.external_validation.repo,
            citations=card.citations,
            upstream=card.upstream,
            instructions=card.instructions,
        )


# -- the first stage -----------------------------------------------------------------------------
def first_stage_step(spec: SuiteSpec, facts: CardFacts, *, synthetic: bool,
                     has_runs: bool) -> str:
    """Step 1 of *How the pool was built*: the retrievers, named and linked, and the fusion."""
    keys = ", ".join(f"`{r}`" for r in spec.pool.retrievers)
    named = [retriever_markdown(facts.retrievers[r]) for r in spec.pool.retrievers
             if r in facts.retrievers]
    fusion = (f"fused with unweighted reciprocal rank fusion (k = {spec.pool.rrf_k}) in the "
              f"order {keys}")
    kept = ("; `provenance-first-stage` holds each run and the fused ranking (`rrf_fused`)."
            if has_runs else ".")
    if synthetic:
        published = (f" The published suite's first stage is {_join(named)}." if named else "")
        return (f"**First stage and fusion.** The runs stored as {keys} were generated from "
                f"fixed seeds (SYNTHETIC): no retriever ran.{published} The runs are {fusion}"
                f"{kept}")
    if len(named) != len(spec.pool.retrievers):
        return f"**First stage and fusion.** The runs of {keys} are {fusion}{kept}"
    return (f"**First stage and fusion.** {_join(named)} each rank the corpus; their runs "
            f"({keys}) are {fusion}{kept}")


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- the judge -----------------------------------------------------------------------------------
def judge_lines(facts: CardFacts) -> list[str]:
    """Bullets of the judge section: another judge whose gains are left out, a judge note."""
    lines = []
    if facts.judge_note:
        lines.append(f"This judge is {facts.judge_note}.")
    if facts.second_judge:
        lines.append(f"The published suite was also judged by a second LLM "
                     f"({facts.second_judge}); its gains are in no release of this repository.")
    return lines


# -- query instructions --------------------------------------------------------------------------
def instruction_line(spec: SuiteSpec, facts: CardFacts, rd: Release) -> str | None:
    """What the card says about query instructions: those the build recorded (carried in the
    task file, so mteb applies them), else what the spec says of the upstream tasks."""
    recorded = (rd.manifest.source_fact("instructions") if rd.manifest else None) or {}
    version = rd.manifest.source_fact("mteb") if rd.manifest else None
    with_column = [s for s in spec.subset_names if rd.has(s, "queries") and "instruction"
                   in pq.read_schema(rd.root / subset_file(s, "queries")).names]
    ship = ("`{subset}-queries` has an `instruction` column" if with_column
            else "no `-instruction` config is shipped")
    if recorded:
        n = sum(1 for s in spec.subset_names if s in recorded)
        of = f" (mteb {version})" if version else ""
        return (f"**Query instructions.** Each query's instruction is its upstream mteb task's "
                f"`prompt[\"query\"]`{of}, recorded at build time for {n} of "
                f"{len(spec.subset_names)} subsets. The task file gives each task that prompt, "
                f"so mteb applies it; {ship}.")
    if facts.instructions.source == "mteb":
        checked = facts.instructions.checked
        count = f" (compared for all {checked} tasks of the published suite)" if checked else ""
        return (f"**Query instructions.** The upstream mteb tasks define each query's "
                f"instruction (`prompt[\"query\"]`){count}. This build recorded none, so its "
                f"task file carries none; {ship}.")
    return None


# -- examples of the suite's quirks (from the data) ----------------------------------------------
def copied_self_documents(rd: Release) -> list[tuple[str, str, str]]:
    """``(subset, query, document)`` of excluded documents filed under another id than the
    query's own: copies of the query's text (e.g. NanoArguAna's self-arguments)."""
    out = []
    for s in rd.spec.subset_names:
        if not rd.has(s, "excluded"):
            continue
        table = rd.table(s, "excluded")
        for q, ids in zip(table["query-id"], table["excluded-corpus-ids"], strict=True):
            out += [(s, str(q), str(d)) for d in (ids if ids is not None else []) if d != q]
    return out


def deep_queries(rd: Release) -> dict[str, list[str]]:
    """``{subset: query ids}`` of queries with more positive labels than the pool holds."""
    out: dict[str, list[str]] = {}
    for s in rd.spec.subset_names:
        qrels = rd.table(s, "qrels", columns=["query-id", "score"])
        counts = qrels[rd.spec.positive_mask(qrels["score"])].groupby("query-id").size()
        deep = sorted(str(q) for q in counts[counts > rd.spec.pool.size].index)
        if deep:
            out[s] = deep
    return out


def example_text(pairs: list[tuple[str, str, str]]) -> str:
    shown = ", ".join(f"`{q}` → `{d}`" for _s, q, d in pairs[:MAX_EXAMPLES])
    more = f" and {len(pairs) - MAX_EXAMPLES} more" if len(pairs) > MAX_EXAMPLES else ""
    return shown + more


# -- relation to the paper -----------------------------------------------------------------------
def paper_relation(spec: SuiteSpec, replayed: dict, history: History, *,
                   synthetic: bool) -> str:
    """The *Relation to the paper* paragraph: the paper's release, and how the replayed cells
    compare with the paper's printed table (``replayed``: ``{metric: DataFrame}`` of fractions,
    under the paper's tie rule and view)."""
    from rcp_data.scoring.compare import CellKey, TableSet, compare_tables, load_tables

    rule = f"rule ({RULE_LETTERS[spec.paper_tie_rule]})"
    if synthetic:
        return ("**Relation to the paper.** This release is SYNTHETIC: its judge and rerankers "
                "are generated, so none of its numbers is comparable with the paper's. "
                + _paper_release_text(spec, history))
    paper_file = resources.provenance_dir() / "paper_values.json"
    boards = (read_json(paper_file).get("leaderboards") or {}) if paper_file.exists() else {}
    if not spec.paper_key or spec.paper_key not in boards:
        return ("**Relation to the paper.** The paper prints no leaderboard for this suite "
                "(`rcp-data verify` compares what it does print). "
                + _paper_release_text(spec, history))
    cells = {}
    for metric, table in replayed.items():
        for model in table.index:
            for col in table.columns:
                value = table.at[model, col]
                if pd.notna(value):
                    cells[CellKey(metric, CARD_K, spec.paper_tie_rule, spec.paper_view, str(model),
                                  str(col))] = 100.0 * float(value)
    mine = TableSet("replay", "replay", spec.name, cells, 0.0)
    paper = load_tables(paper_file, spec)
    rows = [r for r in compare_tables(mine, paper, spec).rows if r["tables"] is not None]
    if not rows:
        return ("**Relation to the paper.** No reranker of this release is in the paper's "
                f"{spec.title} table. " + _paper_release_text(spec, history))
    parts = []
    for metric in ("qrel_ndcg", "rcp_ndcg"):          # qrel-nDCG first
        label = metric_label(metric)
        mrows = [r for r in rows if r["metric"] == metric]
        if not mrows:
            continue
        body = [r for r in mrows if r["column"] != "mean"]
        means = [r for r in mrows if r["column"] == "mean"]
        same = [r for r in body if _prints_as(r)]
        same_means = [r for r in means if _prints_as(r)]
        text = (f"{label}: {len(same)} of {len(body)} cells and {len(same_means)} of "
                f"{len(means)} means print as the paper's")
        off = [r for r in mrows if not _prints_as(r)]
        if off:
            where = pd.Series([spec.column_label(r["column"]) if r["column"] != "mean"
                               else "Mean" for r in off]).value_counts()
            listed = ", ".join(f"{c} {n}" for c, n in where.items())
            text += (f"; the others differ by at most "
                     f"{max(abs(round(r['tables'], 1) - r['reference']) for r in off):.1f} "
                     f"({listed})")
        worst = max(abs(r["tables"] - r["reference"]) for r in mrows)
        text += f"; the unrounded replay is at most {worst:.2f} points from the printed value"
        parts.append(text)
    return (f"**Relation to the paper.** Against the paper's {spec.title} table ({rule}, "
            f"{len({r['model'] for r in rows})} rerankers): " + ". ".join(parts) + ". "
            + _paper_release_text(spec, history))


def _prints_as(row: dict) -> bool:
    return abs(round(row["tables"], 1) - row["reference"]) < 1e-6


def _paper_release_text(spec: SuiteSpec, history: History) -> str:
    paper = history.paper
    current = history.current
    if not paper or current is None:
        return "No release of this repository is recorded as the one the paper used."
    number = paper.get("release")
    rev = paper.get("revision")
    text = f"The paper's tables were replayed from release {number}" + (
        f" (commit `{rev}`)." if rev else ".")
    if number is not None and current.release != number:
        text += (f" This card is release {current.release}: {current.summary}".rstrip()
                 if current.summary else f" This card is release {current.release}.")
    return text


# -- licence and citations -----------------------------------------------------------------------
def licence_lines(spec: SuiteSpec, facts: CardFacts, *, synthetic: bool) -> list[str]:
    """Paragraphs of *Licence and attribution*."""
    lines = []
    up = facts.upstream
    own = spec.card   # a suite of one's own (rcp-data suite init): what it is, where it is from
    if own.description:
        lines.append(own.description.strip())
    if own.links:
        lines.append("Source: " + ", ".join(f"<{u}>" for u in own.links) + ".")
    if not spec.synthetic and not up:
        lines.append(f"Licence: `{spec.license}` (as the suite's spec declares it).")
    elif spec.synthetic or not up:
        lines.append(f"Licence: `{spec.license}`. The data is SYNTHETIC and derives from no "
                     "upstream dataset.")
    else:
        restricted = [f"{r.source} ({', '.join(f'`{s}`' for s in r.subsets)}) "
                      f"is licensed for {r.terms}" for r in up.restricted]
        text = (f"Licence: `{spec.license}`. The data derives from {up.name}, declared "
                f"{up.license} in {up.declared_in}. The original sources keep their "
                "own terms, which can be narrower")
        text += (": " + "; ".join(restricted) + "." if restricted else ".")
        text += (" Corpus, queries and labels are redistributed unchanged at the pinned "
                 "upstream revisions. Check the upstream terms before any commercial use.")
        lines.append(text)
        if synthetic:
            lines.append("In this SYNTHETIC build the judge outputs and reranker scores are "
                         "generated; the upstream terms apply to the upstream data it holds.")
        else:
            lines.append("The `provenance-runs` scores come from third-party reranker models "
                         "and APIs, and the gains from an LLM judge's outputs, so those "
                         "providers' terms apply as well.")
    cite = "Please cite RCP-nDCG ([arXiv:2609.35739](https://arxiv.org/abs/2609.35739))"
    if facts.citations and not spec.synthetic:
        cite += " together with MTEB and the upstream datasets" if any(
            "mteb" in k for k in facts.citations) else " together with the upstream datasets"
    elif own.citation:
        cite += " together with the benchmark"
    lines.append(cite + ":")
    return lines


def citation_text(facts: CardFacts, spec: SuiteSpec) -> str:
    """The BibTeX block: RCP-nDCG, then the spec's upstream entries."""
    text = template_text("rcp_citation.bib").strip()
    own = [spec.card.citation.strip()] if spec.card.citation.strip() else []
    if spec.synthetic:
        return "\n\n".join([text, *own]) + "\n"
    entries = bib_entries()
    missing = [k for k in facts.citations if k not in entries]
    if missing:
        raise InputError(f"no BibTeX entry {missing[0]!r} in templates/citations.bib",
                         path=spec.path, field="card.citations")
    return "\n\n".join([text, *(entries[k] for k in facts.citations), *own]) + "\n"


def bib_entries() -> dict[str, str]:
    """``{key: entry}`` of ``templates/citations.bib``."""
    text = template_text("citations.bib")
    out = {}
    for chunk in re.split(r"\n(?=@)", text.strip()):
        m = re.match(r"@\w+\{([^,]+),", chunk)
        if m:
            out[m.group(1)] = chunk.strip()
    return out


__all__ = ["CardFacts", "bib_entries", "citation_text", "copied_self_documents",
           "deep_queries", "example_text", "first_stage_step", "instruction_line",
           "judge_lines", "licence_lines", "paper_relation", "retriever_markdown"]
