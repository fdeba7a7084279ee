"""The card's facts that are not tables: from the suite spec's ``[card]``, the data, the history.

Each function returns a frozen record of facts for one place of ``templates/card.md.j2``,
whose macros (``templates/card_prose.md.j2``) hold every sentence; none branches on a suite's
name. Facts of the published suite (its retrievers, a second judge, the upstream
licence) come from the spec's ``[card]`` (``builders/<suite>.toml`` with ``_card.toml``);
examples of each suite's quirks come from the release's own tables; the comparison with the
paper from the replay and ``provenance/paper_values.json``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

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
from rcp_data.documents.card_counts import all_subset_facts
from rcp_data.documents.taskfile import template_text
from rcp_data.model.card_format import metric_label
from rcp_data.model.history import History
from rcp_data.model.layout import subset_file
from rcp_data.model.manifest import FirstStageRecord
from rcp_data.model.release import Release


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
@dataclass(frozen=True)
class ComputedRun:
    """A first-stage run rcp-data computed (the build manifest's record): its key, ``bm25`` or
    ``dense``, and the dense model's name (a Hub id, or a local folder's name)."""

    key: str
    method: str
    model: str = ""


def model_label(model: str) -> str:
    """How the card names a dense model: a Hub id as given; a local folder by its name (its
    parent's for a folder named ``model``), never the builder's path."""
    path = Path(model.rstrip("/"))
    if not (path.is_absolute() or model.startswith(".") or len(path.parts) > 2):
        return model
    return path.parent.name if path.name == "model" else path.name


@dataclass(frozen=True)
class FirstStage:
    """Step 1 of *How the pool was built*: the fused retrievers (spec keys, in fusion order),
    those the spec's ``[card]`` names, the fusion constant, whether the runs are shipped, and
    the runs rcp-data computed (``computed``; of a SYNTHETIC release, the others were
    generated)."""

    keys: tuple[str, ...]
    named: tuple[RetrieverCard, ...]
    rrf_k: int
    has_runs: bool
    synthetic: bool
    computed: tuple[ComputedRun, ...] = ()
    candidates: bool = False    # the pools are the suite's fixed candidate lists (no fusion)
    # the build recorded each run's origin (else, of a SYNTHETIC release, every run not
    # computed counts as generated), the runs it records as generated, and whether the corpus
    # and queries were generated
    recorded: bool = False
    generated_keys: tuple[str, ...] = ()
    data_generated: bool = True

    @property
    def all_named(self) -> bool:
        return len(self.named) == len(self.keys)

    @property
    def generated(self) -> tuple[str, ...]:
        """The keys whose runs were generated: as recorded, else (a build before the record)
        of a SYNTHETIC release every run not computed."""
        if self.recorded:
            return self.generated_keys
        done = {c.key for c in self.computed}
        return tuple(k for k in self.keys if k not in done)

    @property
    def given(self) -> tuple[str, ...]:
        """The keys whose runs were given as files (neither computed nor generated)."""
        made = {c.key for c in self.computed} | set(self.generated)
        return tuple(k for k in self.keys if k not in made) if self.recorded else ()


def computed_runs(records: Sequence[FirstStageRecord], keys: Sequence[str]
                  ) -> tuple[ComputedRun, ...]:
    """The computed runs among the build manifest's first-stage ``records``, in ``keys``
    order."""
    by_key = {r.retriever: r for r in records if r.computed}
    return tuple(ComputedRun(k, by_key[k].method, model_label(by_key[k].model))
                 for k in keys if k in by_key)


def first_stage(spec: SuiteSpec, facts: CardFacts, *, synthetic: bool, has_runs: bool,
                records: Sequence[FirstStageRecord] = (), recorded: bool = False,
                data_generated: bool = True) -> FirstStage:
    """The first stage as the spec declares it and the card describes it; ``records``: the
    build manifest's first-stage records (which runs rcp-data computed or generated);
    ``recorded``: the build recorded each part's origin (else every run not computed of a
    SYNTHETIC release counts as generated)."""
    made = {r.retriever for r in records if r.generated}
    return FirstStage(
        recorded=recorded, data_generated=data_generated,
        generated_keys=tuple(k for k in spec.pool.retrievers if k in made),
        keys=tuple(spec.pool.retrievers),
        named=tuple(facts.retrievers[r] for r in spec.pool.retrievers if r in facts.retrievers),
        rrf_k=spec.pool.rrf_k, has_runs=has_runs, synthetic=synthetic,
        computed=computed_runs(records, spec.pool.retrievers),
        candidates=spec.fixed_candidates)


# -- query instructions --------------------------------------------------------------------------
@dataclass(frozen=True)
class Instructions:
    """What the card says about query instructions: those the build recorded (``recorded``
    subsets, carried in the task file so mteb applies them), else what the spec says of the
    upstream tasks (``upstream``: how many tasks were compared, 0 when not stated)."""

    recorded: int
    n_subsets: int
    mteb_version: str | None
    upstream: bool
    checked: int
    with_column: bool


def instructions(spec: SuiteSpec, facts: CardFacts, rd: Release) -> Instructions | None:
    """The query-instruction facts of a release, or None when the card says nothing of them."""
    recorded = (rd.manifest.source_fact("instructions") if rd.manifest else None) or {}
    version = rd.manifest.source_fact("mteb") if rd.manifest else None
    upstream = facts.instructions.source == "mteb"
    if not recorded and not upstream:
        return None
    with_column = any(rd.has(s, "queries") and "instruction"
                      in pq.read_schema(rd.root / subset_file(s, "queries")).names
                      for s in spec.subset_names)
    return Instructions(
        recorded=sum(1 for s in spec.subset_names if s in recorded),
        n_subsets=len(spec.subset_names), mteb_version=str(version) if version else None,
        upstream=upstream, checked=int(facts.instructions.checked or 0),
        with_column=with_column)


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
    """``{subset: query ids}`` of queries with more positive labels than the pool holds
    (:attr:`rcp_data.documents.card_counts.SubsetFacts.deep_queries`)."""
    return {f.name: list(f.deep_queries) for f in all_subset_facts(rd) if f.deep_queries}


# -- relation to the paper -----------------------------------------------------------------------
@dataclass(frozen=True)
class PaperRelease:
    """Which release of this repository the paper's tables were replayed from."""

    number: int | None = None
    revision: str | None = None
    current: int | None = None           # this card's release when it is another one
    current_summary: str = ""
    known: bool = False


@dataclass(frozen=True)
class MetricAgreement:
    """How one metric's replayed cells compare with the paper's printed table."""

    label: str
    same: int                            # cells that print as the paper's
    cells: int
    same_means: int
    means: int
    off_max: float | None                # the largest rounded difference of the others
    off_where: tuple[tuple[str, int], ...]   # (column label, cells) of the others
    worst: float                         # the largest unrounded distance, in points


@dataclass(frozen=True)
class PaperRelation:
    """The *Relation to the paper* facts: ``case`` is ``synthetic``, ``no-board`` (the paper
    prints no leaderboard of this suite), ``no-overlap`` (no reranker in common) or
    ``compared`` (``metrics`` filled)."""

    case: str
    title: str
    rule_letter: str
    rerankers: int
    metrics: tuple[MetricAgreement, ...]
    release: PaperRelease
    # ``synthetic``: what of the release was generated or SIMULATED
    # (:func:`rcp_data.documents.card_provenance.relation_parts`)
    synthetic_parts: str = "its judge and rerankers are generated"


def paper_relation(spec: SuiteSpec, replayed: dict, history: History, *,
                   synthetic: bool) -> PaperRelation:
    """How the replayed cells compare with the paper's printed table (``replayed``:
    ``{metric: DataFrame}`` of fractions, under the paper's tie rule and view)."""
    from rcp_data.scoring.compare import CellKey, TableSet, compare_tables, load_tables

    def relation(case: str, rows: list[dict] | None = None,
                 metrics: tuple[MetricAgreement, ...] = ()) -> PaperRelation:
        return PaperRelation(case, spec.title, RULE_LETTERS[spec.paper_tie_rule],
                             len({r["model"] for r in rows or []}), metrics,
                             _paper_release(history))

    if synthetic:
        return relation("synthetic")
    paper_file = resources.provenance_dir() / "paper_values.json"
    boards = (read_json(paper_file).get("leaderboards") or {}) if paper_file.exists() else {}
    if not spec.paper_key or spec.paper_key not in boards:
        return relation("no-board")
    cells = {}
    for metric, table in replayed.items():
        for model in table.index:
            for col in table.columns:
                value = table.at[model, col]
                if pd.notna(value):
                    cells[CellKey(metric, spec.main_k, spec.paper_tie_rule, spec.paper_view,
                                  str(model), str(col))] = 100.0 * float(value)
    mine = TableSet("replay", "replay", spec.name, cells, 0.0)
    paper = load_tables(paper_file, spec)
    rows = [r for r in compare_tables(mine, paper, spec).rows if r["tables"] is not None]
    if not rows:
        return relation("no-overlap")
    metrics = []
    for metric in ("qrel_ndcg", "rcp_ndcg"):          # qrel-nDCG first
        mrows = [r for r in rows if r["metric"] == metric]
        if not mrows:
            continue
        body = [r for r in mrows if r["column"] != "mean"]
        means = [r for r in mrows if r["column"] == "mean"]
        off = [r for r in mrows if not _prints_as(r)]
        where = pd.Series([spec.column_label(r["column"]) if r["column"] != "mean"
                           else "Mean" for r in off]).value_counts()
        metrics.append(MetricAgreement(
            label=metric_label(metric, spec.main_k), same=sum(map(_prints_as, body)),
            cells=len(body),
            same_means=sum(map(_prints_as, means)), means=len(means),
            off_max=(max(abs(round(r["tables"], 1) - r["reference"]) for r in off)
                     if off else None),
            off_where=tuple((str(c), int(n)) for c, n in where.items()),
            worst=max(abs(r["tables"] - r["reference"]) for r in mrows)))
    return relation("compared", rows, tuple(metrics))


def _prints_as(row: dict) -> bool:
    return abs(round(row["tables"], 1) - row["reference"]) < 1e-6


def _paper_release(history: History) -> PaperRelease:
    paper = history.paper
    current = history.current
    if not paper or current is None:
        return PaperRelease()
    number = paper.get("release")
    other = number is not None and current.release != number
    return PaperRelease(number=number, revision=paper.get("revision"),
                        current=current.release if other else None,
                        current_summary=(current.summary or "").rstrip() if other else "",
                        known=True)


# -- licence and citations -----------------------------------------------------------------------
@dataclass(frozen=True)
class Restricted:
    """An upstream source licensed more narrowly than the suite."""

    source: str
    subsets: tuple[str, ...]
    terms: str


@dataclass(frozen=True)
class Licence:
    """The facts of *Licence and attribution*: the spec's own description and links (a suite
    of one's own), how the licence is stated (``kind``: ``declared`` by the spec, ``generated``
    data, or derived from an ``upstream`` dataset) and what the citation names beside RCP-nDCG
    (``cite_with``: ``mteb``, ``upstream``, ``benchmark`` or ``""``)."""

    description: str
    links: tuple[str, ...]
    kind: str
    license: str
    upstream: UpstreamCard | None
    restricted: tuple[Restricted, ...]
    synthetic_build: bool
    cite_with: str
    # a SYNTHETIC build: what of it is generated, whose terms apply
    # (:func:`rcp_data.documents.card_provenance.licence_parts`)
    synthetic_text: str = ""


def licence(spec: SuiteSpec, facts: CardFacts, *, synthetic: bool) -> Licence:
    """The licence facts of the suite's spec and of this build."""
    up = facts.upstream
    own = spec.card   # a suite of one's own (rcp-data suite init): what it is, where it is from
    if not spec.synthetic and not up:
        kind = "declared"
    elif spec.synthetic or not up:
        kind = "generated"
    else:
        kind = "upstream"
    cite_with = ""
    if facts.citations and not spec.synthetic:
        cite_with = "mteb" if any("mteb" in k for k in facts.citations) else "upstream"
    elif own.citation:
        cite_with = "benchmark"
    restricted = tuple(Restricted(r.source, tuple(r.subsets), r.terms)
                       for r in (up.restricted if up and kind == "upstream" else ()))
    return Licence(description=own.description.strip(), links=tuple(own.links), kind=kind,
                   license=spec.license, upstream=up if kind == "upstream" else None,
                   restricted=restricted, synthetic_build=synthetic, cite_with=cite_with)


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


__all__ = ["CardFacts", "FirstStage", "Instructions", "Licence", "MetricAgreement",
           "PaperRelation", "PaperRelease", "Restricted", "bib_entries", "citation_text",
           "ComputedRun", "computed_runs", "copied_self_documents", "deep_queries", "first_stage", "instructions", "licence",
           "paper_relation"]
