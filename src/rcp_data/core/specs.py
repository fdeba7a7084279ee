"""Suite specs: what each suite is, read from ``builders/<suite>.toml``.

A spec holds as data everything the shared stages need to know about a suite (subsets, split,
the paper's tie rule, views, the reranker name map, the paper's revision, pool and corpus rules),
so no stage branches on the suite's name.

Every table is read into a frozen dataclass and checked on load (:mod:`rcp_data.core.typed_tables`):
an unknown table or key, a missing required key or a value of the wrong type is an
:class:`InputError` naming the file and the key (``pool.size``, ``subsets[2].label``). ``[source]``
is a :class:`SourceSpec`, ``[card]`` a :class:`CardSpec`. What a positive label is, is decided
once: :func:`positive_mask` (``grade >= [source] grade_positive``), for every count.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data import resources
from rcp_data.core.errors import InputError, UsageError, shown
from rcp_data.core.io import read_text
from rcp_data.core.rules import (  # noqa: F401  (their home is core.rules; importable here)
    DEFAULT_WITHOUT_POSITIVES,
    RULE_LETTERS,
    RULE_NAMES,
    SHOWN_TIE_RULES,
    TIE_RULES,
    VIEWS,
    WITHOUT_POSITIVES,
)
from rcp_data.core.typed_tables import from_table, key_of, table_values, value_of

if TYPE_CHECKING:
    import numpy as np

# the cutoffs of a card's result tables when the spec names none (``[suite] card_k``)
DEFAULT_CARD_K = (10,)


def builders_dir() -> Path:
    """The folder of suite specs: ``$RCP_DATA_BUILDERS`` or the packaged ``builders/``."""
    env = os.environ.get("RCP_DATA_BUILDERS")
    if env:
        return Path(env)
    return resources.builders_dir()


UPSTREAM_KEYS = ("queries", "qrels")   # the upstream counts a spec may state
LOCAL_FORMATS = ("", "beir", "trec", "csv", "table", "irds")   # [source] format of local files


@dataclass(frozen=True)
class SubsetSpec:
    name: str
    label: str
    task: str
    source: str = ""
    mteb: str = ""
    excludes: str = ""
    domain: str | None = None
    language: str | None = None
    # the upstream's published counts (e.g. queries, qrels rows): facts the reader must
    # reproduce, stated once here
    upstream: dict[str, int] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class DomainSpec:
    name: str
    label: str
    task: str
    native: str
    source: str = ""
    ocr_source: str = ""


# the pool rules (rcp_data.building.pools.build_pools): the fused top k with missed positives
# injected, the fused top k with every judged document added, or the suite's own fixed
# candidate lists as its pools (no first stage computed, nothing added)
POOL_RULES = ("top-k-inject", "top-k-union-judged", "candidates")
CANDIDATES = "candidates"


@dataclass(frozen=True)
class PoolSpec:
    """``[pool]``: how each query's judged pool is made. With ``rule = "candidates"`` the pools
    ARE the suite's candidate lists: ``retrievers`` names one list, given as a file of the
    builder inputs (``first_stage/<name>.trec`` or ``.parquet``, its order the list's order);
    no run is computed, nothing is fused in or added, and ``size`` does not cut the lists."""

    rule: str = "top-k-inject"
    size: int = 150
    retrievers: tuple[str, ...] = ("embed_v4", "bm25", "octen")
    rrf_k: int = 60
    # dense retrievers the build computes when no run is given: {retriever: sentence-transformers
    # model (a local path or a cached Hub id)} (rcp_data.building.dense)
    dense: dict[str, str] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class CorpusSpec:
    layout: str = "per-subset"          # per-subset | shared | per-domain
    group: str = ""                     # name of the shared corpus folder (layout = shared)
    provenance_split: str = "subset"    # subset | domain
    repair: str = ""
    shard_rows: int = 1_000_000         # rows per corpus shard (shared / per-domain layouts)
    row_group_rows: int = 100_000


@dataclass(frozen=True)
class SourceSpec:
    """``[source]``: how the suite's upstream is read, and what its grades mean."""

    read: str = ""                      # the name of its reader in rcp_data.sources.registry
    reader: str = ""                    # what the reader reads with (ir_datasets, vidore, ...)
    corpus: str = ""                    # the upstream corpus (a shared collection)
    grade_positive: int = 1             # the lowest grade that is a positive label
    grades: tuple[int, int] | None = None   # [lowest, highest] upstream grade
    # documents that may be empty upstream: true (every subset) or subset / domain names
    allow_empty_documents: bool | tuple[str, ...] = False
    gold: str = ""                      # BRIGHT: the examples' field of the gold ids
    extra_judged_queries: str | None = None   # judged, never released (TREC-DL's dev queries)
    raw_collection_hint: str = ""       # the raw upstream file a repair check reads
    prompts: dict[str, str] = field(default_factory=dict, hash=False)  # {task: query prompt}
    # local files (``read = "local"``, rcp_data.sources.local_files): the data folder (relative
    # to the spec file), its format and, for tables holding every subset, the subset column
    path: str = ""
    format: str = ""                    # beir | trec | csv | table | irds
    subset_column: str = ""
    # format "table": one file of (query, document, grade) rows in the data folder, the columns
    # of each role (query, query_id, document, document_id, title, grade) and the grade map
    table: str = ""
    columns: dict[str, str] = field(default_factory=dict, hash=False)
    grade_map: dict[str, int] = field(default_factory=dict, hash=False)


JUDGE_PRESETS = ("full", "reduced", "stage-b-only")   # the judging schedules' presets


@dataclass(frozen=True)
class JudgeSpec:
    """``[judge]``: how the suite's pools are judged by default."""

    preset: str = "full"                # full | reduced | stage-b-only


# -- [card]: facts the dataset card prints, never used to shape data --------------------------------
@dataclass(frozen=True)
class RetrieverCard:
    """``[card.retrievers.<key>]``: a first-stage retriever as the card names it."""

    name: str
    url: str = ""
    kind: str = ""
    settings: str = ""


@dataclass(frozen=True)
class MtebCard:
    """``[card.mteb]``: the pull request that proposes the tasks to mteb."""

    pr: int | None = None
    pr_url: str = ""
    renamed: str = ""                   # when the tasks were renamed ...Retrieval -> ...Reranking


@dataclass(frozen=True)
class ExternalValidationCard:
    """``[card.external_validation]``: the paper's validation data, released beside."""

    repo: str = ""


@dataclass(frozen=True)
class RestrictedSource:
    """An upstream source whose own terms are narrower than the declared licence."""

    source: str
    terms: str
    subsets: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpstreamCard:
    """``[card.upstream]``: what the data derives from, and its licence."""

    name: str
    license: str
    declared_in: str
    restricted: tuple[RestrictedSource, ...] = ()


@dataclass(frozen=True)
class InstructionsCard:
    """``[card.instructions]``: where the upstream tasks' query instructions come from."""

    source: str = ""                    # "mteb": each query's instruction is its task's prompt
    checked: int | None = None          # tasks whose prompt was compared with mteb's


# a reference value of the published card: a count, a mean, a text, or counts per subset
ReferenceValue = int | float | str | dict[str, int]


@dataclass(frozen=True)
class CardSpec:
    """``[card]``, merged over ``card_shared``'s: facts the dataset card prints."""

    retrievers: dict[str, RetrieverCard] = field(default_factory=dict, hash=False)
    second_judge: str = ""
    judge_note: str = ""
    mteb: MtebCard = field(default_factory=MtebCard)
    external_validation: ExternalValidationCard = field(default_factory=ExternalValidationCard)
    citations: tuple[str, ...] = ()     # keys of documents/templates/citations.bib
    upstream: UpstreamCard | None = None
    instructions: InstructionsCard = field(default_factory=InstructionsCard)
    # values of the published card to compare a build against; neither printed nor used
    reference: dict[str, ReferenceValue] = field(default_factory=dict, hash=False)
    # a suite of one's own (``rcp-data suite init``): what the data is, how to cite it, where
    # it comes from
    description: str = ""
    citation: str = ""                  # a BibTeX entry
    links: tuple[str, ...] = ()         # source links (URLs)


def positive_mask(scores, grade_positive: int) -> np.ndarray:
    """Which grades are positive labels: ``grade >= grade_positive`` (a missing grade never).

    The one definition of "positive" (pools, card, build counts, integrity, readers, replay);
    call it through :meth:`SuiteSpec.positive_mask` where the spec is at hand."""
    import numpy as np  # here: reading a spec (the command line) loads no array library

    return np.asarray(scores, dtype=np.float64) >= grade_positive


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    pretty_name: str
    title: str
    repo: str
    split: str
    paper_tie_rule: str
    subsets: tuple[SubsetSpec, ...]
    rerankers: dict[str, str]
    pool: PoolSpec
    corpus: CorpusSpec
    source: SourceSpec = field(default_factory=SourceSpec)
    judge: JudgeSpec = field(default_factory=JudgeSpec)
    paper_view: str = "subsets"
    paper_revision: str | None = None
    paper_key: str | None = None
    synthetic: bool = False
    license: str = "other"
    languages: tuple[str, ...] = ("en",)
    task_categories: tuple[str, ...] = ("text-retrieval",)
    modalities: tuple[str, ...] = ("text",)
    task_versioning: str = "suffix"
    mteb_floor: str = "2.0.1"
    domains: tuple[DomainSpec, ...] = ()
    view_languages: tuple[str, ...] = ()
    # the cutoffs of the card's result tables, the first one the card's main k (the task
    # file's main score, the leaderboard, the summaries; ``[suite] card_k``)
    card_k: tuple[int, ...] = DEFAULT_CARD_K
    upstream: dict[str, int] = field(default_factory=dict, compare=False, hash=False)
    # facts the dataset card prints (``[card]``, merged over ``card_shared``'s); never used to
    # shape data (rcp_data.documents.card_facts reads them)
    card: CardSpec = field(default_factory=CardSpec, compare=False, hash=False)
    path: str = ""
    # keys whose value is still a TODO marker (``rcp-data suite init`` leaves them): a build
    # refuses to prepare a release for publishing while any is left (:func:`check_no_todo`)
    todo: tuple[str, ...] = field(default=(), compare=False, hash=False)

    # -- names ---------------------------------------------------------------------------
    @property
    def subset_names(self) -> list[str]:
        return [s.name for s in self.subsets]

    def subset(self, name: str) -> SubsetSpec:
        for s in self.subsets:
            if s.name == name:
                return s
        raise InputError(f"suite {self.name!r} has no subset {name!r}")

    @property
    def fixed_candidates(self) -> bool:
        """Whether the suite's pools are its own candidate lists (``[pool] rule =
        "candidates"``): no first stage is computed and no graded document is added."""
        return self.pool.rule == CANDIDATES

    @property
    def has_languages(self) -> bool:
        return bool(self.domains)

    def short_name(self, model: str) -> str:
        """Card short name of a hub model id (the id itself when unmapped)."""
        for short, hub in self.rerankers.items():
            if hub == model:
                return short
        return model

    def hub_id(self, name: str) -> str:
        """Hub model id of a short name or hub id."""
        return self.rerankers.get(name, name)

    # -- upstream data ---------------------------------------------------------------------
    @property
    def grades(self) -> tuple[int, int]:
        """The range of the upstream grades, ``[source] grades = [lowest, highest]``."""
        if self.source.grades is None:
            raise InputError("the suite spec declares no grade range ([source] grades = "
                             "[lowest, highest])", path=self.path, field="source.grades")
        return self.source.grades

    @property
    def grade_positive(self) -> int:
        """The lowest grade that is a positive label (``[source] grade_positive``)."""
        return self.source.grade_positive

    def is_positive(self, grade: float) -> bool:
        """Whether one grade is a positive label (:func:`positive_mask`)."""
        return bool(positive_mask([grade], self.source.grade_positive)[0])

    def positive_mask(self, scores) -> np.ndarray:
        """Which of ``scores`` (grades) are positive labels (:func:`positive_mask`)."""
        return positive_mask(scores, self.source.grade_positive)

    def allows_empty_documents(self, subset: str) -> bool:
        """Whether documents of ``subset`` may have empty text upstream: ``[source]
        allow_empty_documents`` is true (every subset) or lists subset or domain names."""
        allowed = self.source.allow_empty_documents
        if isinstance(allowed, bool):
            return allowed
        sub = self.subset(subset)
        return sub.name in allowed or (sub.domain is not None and sub.domain in allowed)

    # -- layout --------------------------------------------------------------------------
    def provenance_split(self, subset: str) -> str:
        if self.corpus.provenance_split == "domain":
            sub = self.subset(subset)
            assert sub.domain is not None
            return sub.domain
        return subset

    @property
    def provenance_splits(self) -> list[str]:
        seen: list[str] = []
        for s in self.subsets:
            p = self.provenance_split(s.name)
            if p not in seen:
                seen.append(p)
        return seen

    def corpus_group(self, subset: str) -> str | None:
        """Folder name of the shared corpus a subset reads, or None when it has its own."""
        if self.corpus.layout == "shared":
            return self.corpus.group or "corpus"
        if self.corpus.layout == "per-domain":
            return self.subset(subset).domain
        return None

    # -- the card -----------------------------------------------------------------------
    @property
    def main_k(self) -> int:
        """The card's main cutoff: the first of ``[suite] card_k`` (the task file's main
        score ``ndcg_float_at_<k>``, the default of ``replay`` and ``score``)."""
        return self.card_k[0]

    # -- views ---------------------------------------------------------------------------
    @property
    def card_views(self) -> tuple[str, ...]:
        """The views whose tables the card prints: per language view for a suite with
        languages (native, then languages), else the plain subsets view."""
        return ("native", "languages") if self.has_languages else ("subsets",)

    def view_columns(self, view: str) -> list[tuple[str, str, list[str]]]:
        """Table columns of a view: ``(key, label, subsets averaged into it)``."""
        if view not in VIEWS:
            raise UsageError(f"unknown view {view!r}; choose one of {', '.join(VIEWS)}")
        if view == "subsets":
            return [(s.name, s.label, [s.name]) for s in self.subsets]
        if not self.has_languages:
            raise UsageError(
                f"view {view!r} needs a suite with languages; {self.name!r} has none "
                "(use --view subsets)"
            )
        cols = []
        for d in self.domains:
            if view == "native":
                members = [f"{d.name}__{d.native}"]
            else:
                members = [f"{d.name}__{lang}" for lang in self.view_languages]
            cols.append((d.name, d.label, members))
        return cols

    def column_label(self, key: str) -> str:
        for s in self.subsets:
            if s.name == key:
                return s.label
        for d in self.domains:
            if d.name == key:
                return d.label
        return key

    def column_key(self, label_or_key: str) -> str:
        for s in self.subsets:
            if label_or_key in (s.name, s.label):
                return s.name
        for d in self.domains:
            if label_or_key in (d.name, d.label):
                return d.name
        return label_or_key


def _merged(base: dict, over: dict) -> dict:
    """``over`` merged into ``base``, tables key by key (``over`` wins)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


# the tables of a suite spec, and of the shared files it names
SPEC_TABLES = ("suite", "rerankers", "pool", "corpus", "source", "upstream", "subsets",
               "domains", "views", "card", "judge")
# SuiteSpec fields a spec's other tables fill (never keys of [suite])
_NOT_SUITE_KEYS = ("subsets", "rerankers", "pool", "corpus", "source", "domains",
                   "view_languages", "upstream", "card", "path", "todo", "judge")
TODO = "TODO"   # a value that starts with it is a marker left to fill in


def todo_keys(raw: object, where: str = "") -> list[str]:
    """The dotted keys of ``raw`` (a parsed TOML table) whose value starts with :data:`TODO`."""
    if isinstance(raw, str):
        return [where] if raw.strip().startswith(TODO) else []
    if isinstance(raw, dict):
        return [k for key, v in raw.items() for k in todo_keys(v, key_of(where, key))]
    if isinstance(raw, list):
        return [k for i, v in enumerate(raw) for k in todo_keys(v, f"{where}[{i}]")]
    return []


def dense_name(model: str) -> str:
    """The retriever key of a dense model: ``KEY=MODEL`` gives KEY; else the model's last path
    part, lower-case, ``_`` for other characters (``sentence-transformers/all-MiniLM-L6-v2`` ->
    ``all_minilm_l6_v2``; a folder named ``model`` is named by its parent)."""
    if "=" in model:
        return dense_name(model.split("=", 1)[0])
    base = Path(model.rstrip("/")).name
    if base == "model":
        base = Path(model.rstrip("/")).parent.name
    key = re.sub(r"[^0-9a-z]+", "_", base.lower()).strip("_")
    if not key or key == "bm25":
        raise UsageError(f"cannot name a retriever after the model {model!r}; give KEY=MODEL")
    return key


def with_dense(spec: SuiteSpec, models: Sequence[str]) -> SuiteSpec:
    """``spec`` with the dense models ``[KEY=]MODEL`` (``--dense``). A key the spec fuses
    gets that model (a retriever of ``[pool] dense``, or one whose run the spec expects given);
    any other key is a new dense retriever fused beside the declared ones, in the paper's order
    (the first new one before them, the others after: ``minilm, bm25`` for a BM25-only spec).
    The build records the fused retrievers and their models in the manifest
    (:class:`rcp_data.model.manifest.FirstStageRecord`), which the release's readers apply."""
    if models and spec.fixed_candidates:
        raise UsageError(f"suite {spec.name!r}: the pools are its candidate lists ([pool] rule = "
                         f"\"{CANDIDATES}\"), so no dense first stage runs; drop --dense")
    dense = dict(spec.pool.dense)
    added: list[str] = []
    seen: set[str] = set()
    for item in models:
        key = dense_name(item)
        model = item.split("=", 1)[1] if "=" in item else item
        if key in seen:
            raise UsageError(f"--dense {item}: two dense models get the retriever name {key!r}")
        seen.add(key)
        if key not in spec.pool.retrievers:
            added.append(key)
        dense[key] = model
    retrievers = tuple(added[:1]) + spec.pool.retrievers + tuple(added[1:])
    return replace(spec, pool=replace(spec.pool, dense=dense, retrievers=retrievers))


def check_no_todo(spec: SuiteSpec, given: Sequence[str] = ()) -> None:
    """Refuse a spec that still holds TODO markers (one line naming the file and each key);
    ``given``: keys a command line option fills in (``--repo``: ``suite.repo``)."""
    left = [k for k in spec.todo if k not in given]
    if left:
        raise InputError(f"the spec still holds TODO markers, fill them in before preparing a "
                         f"release: {', '.join(left)}", path=spec.path, field=left[0])


@dataclass(frozen=True)
class _SuiteFiles:
    """The keys of ``[suite]`` that name shared files (read by the loader only)."""

    reranker_map: str = ""
    card_shared: str = ""


@dataclass(frozen=True)
class _Views:
    languages: tuple[str, ...] = ()


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(read_text(path))
    except FileNotFoundError as exc:
        raise InputError("suite spec not found", path=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(path)) from exc


def _only_tables(raw: dict, allowed: tuple[str, ...], path: str) -> None:
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise InputError(f"unknown table (known: {', '.join(allowed)})", path=path,
                         field=unknown[0])


def _rerankers(raw: object, path: str) -> dict[str, str]:
    return value_of(dict[str, str], raw, path=path, key="rerankers")


def _upstream(raw: object, path: str, key: str) -> dict[str, int]:
    counts = value_of(dict[str, int], raw, path=path, key=key)
    for name in counts:
        if name not in UPSTREAM_KEYS:
            raise InputError(f"unknown key (known: {', '.join(UPSTREAM_KEYS)})", path=path,
                             field=key_of(key, name))
    return counts


def _list_of_tables(raw: dict, key: str, path: str) -> list:
    items = raw.get(key, [])
    if not isinstance(items, list):
        raise InputError(f"expected a list of tables ([[{key}]]), got {shown(items)}",
                         path=path, field=key)
    return items


def _subset(raw: object, key: str, path: str) -> SubsetSpec:
    if not isinstance(raw, dict):
        raise InputError(f"expected a table, got {shown(raw)}", path=path, field=key)
    table = {k: v for k, v in raw.items() if k != "upstream"}
    return from_table(SubsetSpec, table, path=path, where=key, skip=("upstream",),
                      upstream=_upstream(raw.get("upstream", {}), path, f"{key}.upstream"))


def _check_source(source: SourceSpec, names: set[str], path: str) -> None:
    """What ``[source]`` says beyond its types, checked when the spec is read."""
    if source.grades is not None and source.grades[0] > source.grades[1]:
        raise InputError(f"expected [lowest, highest], got {list(source.grades)}", path=path,
                         field="source.grades")
    if source.grade_positive < 1 or (source.grades is not None
                                     and source.grade_positive > source.grades[1]):
        top = f" and at most the highest grade {source.grades[1]}" if source.grades else ""
        raise InputError(f"the positive grade must be at least 1 (0 is a pooled document "
                         f"without a label){top}, got {source.grade_positive}", path=path,
                         field="source.grade_positive")
    if source.format not in LOCAL_FORMATS:
        raise InputError(f"must be one of {', '.join(f for f in LOCAL_FORMATS if f)}",
                         path=path, field="source.format")
    allowed = source.allow_empty_documents
    if isinstance(allowed, bool):
        return
    unknown = sorted(set(allowed) - names)
    if unknown:
        raise InputError(f"names unknown subsets {unknown}", path=path,
                         field="source.allow_empty_documents")


def _check_pool(pool: PoolSpec, path: str) -> None:
    """What ``[pool]`` says beyond its types: a known rule; fixed candidate lists are one list,
    given (never computed)."""
    if pool.rule not in POOL_RULES:
        raise InputError(f"must be one of {', '.join(POOL_RULES)}", path=path, field="pool.rule")
    if pool.rule != CANDIDATES:
        return
    if len(pool.retrievers) != 1:
        raise InputError(f"the pools are the candidate lists (rule = \"{CANDIDATES}\"): name "
                         f"one list, e.g. retrievers = [\"{CANDIDATES}\"], got "
                         f"{list(pool.retrievers)}", path=path, field="pool.retrievers")
    if pool.dense or pool.retrievers[0] == "bm25":
        raise InputError(f"the candidate lists (rule = \"{CANDIDATES}\") are given as a file, "
                         "never computed: name them other than bm25 and give no [pool] dense",
                         path=path, field="pool.dense" if pool.dense else "pool.retrievers")


def _check_card_k(card_k: tuple[int, ...], path: str) -> None:
    """``[suite] card_k``: one cutoff or several, each a positive integer, none twice."""
    if not card_k:
        raise InputError("expected at least one cutoff (e.g. [10])", path=path,
                         field="suite.card_k")
    for i, k in enumerate(card_k):
        if k < 1:
            raise InputError(f"a cutoff must be a positive integer, got {k}", path=path,
                             field=f"suite.card_k[{i}]")
    if len(set(card_k)) != len(card_k):
        raise InputError(f"lists a cutoff twice: {list(card_k)}", path=path,
                         field="suite.card_k")


def _card(raw: object, shared_file: str, base: Path, path: str) -> CardSpec:
    """``[card]`` merged over the shared file's (both checked, each naming its own file)."""
    if not isinstance(raw, dict):
        return value_of(CardSpec, raw, path=path, key="card")   # refuses a non-table
    if shared_file:
        shared_path = base / shared_file
        shared = _read_toml(shared_path)
        _only_tables(shared, ("card",), str(shared_path))
        from_table(CardSpec, shared.get("card", {}), path=str(shared_path), where="card")
        raw = _merged(shared.get("card", {}), raw)
    return from_table(CardSpec, raw, path=path, where="card")


def load_spec_file(path: str | Path) -> SuiteSpec:
    """Read and check one suite spec: an unknown table or key, a missing required key or a
    value of the wrong type is an :class:`InputError` naming the file and the key."""
    path = Path(path)
    where = str(path)
    raw = _read_toml(path)
    _only_tables(raw, SPEC_TABLES, where)
    suite = raw.get("suite", {})
    if not isinstance(suite, dict):
        raise InputError(f"expected a table, got {shown(suite)}", path=where, field="suite")
    files = from_table(_SuiteFiles, {k: suite[k] for k in ("reranker_map", "card_shared")
                                     if k in suite}, path=where, where="suite")
    suite = table_values(SuiteSpec, {k: v for k, v in suite.items()
                                     if k not in ("reranker_map", "card_shared")},
                         path=where, where="suite", skip=_NOT_SUITE_KEYS)
    rerankers = _rerankers(raw.get("rerankers", {}), where)
    if files.reranker_map:
        shared_path = path.parent / files.reranker_map
        shared = _read_toml(shared_path)
        _only_tables(shared, ("rerankers",), str(shared_path))
        rerankers = {**_rerankers(shared.get("rerankers", {}), str(shared_path)), **rerankers}
    card = _card(raw.get("card", {}), files.card_shared, path.parent, where)
    domains = tuple(from_table(DomainSpec, d, path=where, where=f"domains[{i}]")
                    for i, d in enumerate(_list_of_tables(raw, "domains", where)))
    view_languages = from_table(_Views, raw.get("views", {}), path=where,
                                where="views").languages
    if domains:
        subsets = tuple(
            SubsetSpec(
                name=f"{d.name}__{lang}",
                label=f"{d.label} ({lang})",
                task=d.task,
                source=d.source,
                mteb=d.ocr_source,
                domain=d.name,
                language=lang,
            )
            for d in domains
            for lang in view_languages
        )
    else:
        subsets = tuple(_subset(s, f"subsets[{i}]", where)
                        for i, s in enumerate(_list_of_tables(raw, "subsets", where)))
    pool = from_table(PoolSpec, raw.get("pool", {}), path=where, where="pool")
    stray = sorted(set(pool.dense) - set(pool.retrievers))
    if stray:
        raise InputError(f"is not one of [pool] retrievers {list(pool.retrievers)}", path=where,
                         field=f"pool.dense.{stray[0]}")
    _check_pool(pool, where)
    corpus = from_table(CorpusSpec, raw.get("corpus", {}), path=where, where="corpus")
    if suite.get("paper_tie_rule") not in TIE_RULES:
        raise InputError(f"must be one of {TIE_RULES}", path=where, field="suite.paper_tie_rule")
    if suite.get("paper_view", "subsets") not in VIEWS:
        raise InputError(f"must be one of {VIEWS}", path=where, field="suite.paper_view")
    _check_card_k(suite.get("card_k", DEFAULT_CARD_K), where)
    source = from_table(SourceSpec, raw.get("source", {}), path=where, where="source")
    _check_source(source, {s.name for s in subsets} | {d.name for d in domains}, where)
    judge = from_table(JudgeSpec, raw.get("judge", {}), path=where, where="judge")
    if judge.preset not in JUDGE_PRESETS:
        raise InputError(f"must be one of {', '.join(JUDGE_PRESETS)}", path=where,
                         field="judge.preset")
    return SuiteSpec(
        subsets=subsets,
        rerankers=rerankers,
        pool=pool,
        corpus=corpus,
        source=source,
        judge=judge,
        upstream=_upstream(raw.get("upstream", {}), where, "upstream"),
        card=card,
        domains=domains,
        view_languages=view_languages,
        path=where,
        todo=tuple(todo_keys(raw)),
        **suite,
    )


SUITE_ALIASES = {"vidore": "vidore_v3", "trec_dl": "trecdl"}


def suite_key(name: str) -> str:
    """The canonical name of a suite however it is spelled: case and ``-``/``_`` do not
    matter, and ``vidore`` is ``vidore_v3``, ``trec-dl`` is ``trecdl``."""
    key = name.strip().lower().replace("-", "_")
    return SUITE_ALIASES.get(key, key)


def load_spec(name: str) -> SuiteSpec:
    """Load the spec of suite ``name`` (``demo``, ``trecdl``, ``nanobeir``, ``bright``,
    ``vidore_v3``; any spelling :func:`suite_key` accepts)."""
    path = builders_dir() / f"{suite_key(name)}.toml"
    if not path.exists():
        raise UsageError(f"unknown suite {name!r}; known: {shown_suites()}")
    return _load_spec_cached(path)


@cache
def _load_spec_cached(path: Path) -> SuiteSpec:
    return load_spec_file(path)


def known_suites() -> list[str]:
    """The suites' canonical names (their spec files' stems: ``vidore_v3``)."""
    return sorted(p.stem for p in builders_dir().glob("*.toml") if not p.stem.startswith("_"))


def suite_cli_name(key: str) -> str:
    """A suite's name as the command line spells it (``vidore-v3``); :func:`suite_key` reads
    it back."""
    return key.replace("_", "-")


def shown_suites() -> str:
    """The known suites as help texts and error messages list them (``..., vidore-v3``)."""
    return ", ".join(suite_cli_name(k) for k in known_suites())
