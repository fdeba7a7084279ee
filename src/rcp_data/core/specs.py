"""Suite specs: what each suite is, read from ``builders/<suite>.toml``.

A spec holds as data everything the shared stages need to know about a suite (subsets, split,
the paper's tie rule, views, the reranker name map, the paper's revision, pool and corpus rules),
so no stage branches on the suite's name.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from rcp_data import resources
from rcp_data.core.errors import InputError, UsageError

# Tie rules for equal reranker scores (paper App. B.1), their letters and what they do.
TIE_RULES = ("doc-id", "group-mean", "pool-order")
RULE_LETTERS = {"doc-id": "a", "group-mean": "b", "pool-order": "c"}
RULE_NAMES = {
    "doc-id": "document-id tie-break",
    "group-mean": "group-mean gain for ties",
    "pool-order": "pool order for ties",
}
# The tie rules whose tables a card prints (and ``verify`` replays against the card).
SHOWN_TIE_RULES = ("doc-id", "group-mean")
VIEWS = ("subsets", "native", "languages")


def builders_dir() -> Path:
    """The folder of suite specs: ``$RCP_DATA_BUILDERS`` or the packaged ``builders/``."""
    env = os.environ.get("RCP_DATA_BUILDERS")
    if env:
        return Path(env)
    return resources.builders_dir()


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
    upstream: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class DomainSpec:
    name: str
    label: str
    task: str
    native: str
    source: str = ""
    ocr_source: str = ""


@dataclass(frozen=True)
class PoolSpec:
    rule: str = "top-k-inject"
    size: int = 150
    retrievers: tuple[str, ...] = ("embed_v4", "bm25", "octen")
    rrf_k: int = 60


@dataclass(frozen=True)
class CorpusSpec:
    layout: str = "per-subset"          # per-subset | shared | per-domain
    group: str = ""                     # name of the shared corpus folder (layout = shared)
    provenance_split: str = "subset"    # subset | domain
    repair: str = ""
    shard_rows: int = 1_000_000         # rows per corpus shard (shared / per-domain layouts)
    row_group_rows: int = 100_000


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
    source: dict = field(default_factory=dict)
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
    upstream: dict = field(default_factory=dict, compare=False, hash=False)
    # facts the dataset card prints (``[card]``, merged over ``card_shared``'s); never used to
    # shape data (rcp_data.documents.card_facts reads them)
    card: dict = field(default_factory=dict, compare=False, hash=False)
    path: str = ""

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
        if "grades" not in self.source:
            raise InputError("the suite spec declares no grade range ([source] grades = "
                             "[lowest, highest])", path=self.path, field="grades")
        return _grade_range(self.source["grades"], self.path)

    def allows_empty_documents(self, subset: str) -> bool:
        """Whether documents of ``subset`` may have empty text upstream: ``[source]
        allow_empty_documents`` is true (every subset) or lists subset or domain names."""
        allowed = self.source.get("allow_empty_documents", False)
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


def _grade_range(raw: object, path: str) -> tuple[int, int]:
    ok = (isinstance(raw, list) and len(raw) == 2
          and all(isinstance(g, int) and not isinstance(g, bool) for g in raw) and raw[0] <= raw[1])
    if not ok:
        raise InputError(f"[source] grades must be [lowest, highest] integers, got {raw!r}",
                         path=path, field="grades")
    return raw[0], raw[1]


def _check_source(source: dict, names: set[str], path: str) -> None:
    """The ``[source]`` keys every stage relies on, checked when the spec is read."""
    if "grades" in source:
        _grade_range(source["grades"], path)
    allowed = source.get("allow_empty_documents", False)
    if isinstance(allowed, bool):
        return
    if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
        raise InputError("[source] allow_empty_documents must be true, false or a list of "
                         "subset or domain names", path=path, field="allow_empty_documents")
    unknown = sorted(set(allowed) - names)
    if unknown:
        raise InputError(f"[source] allow_empty_documents names unknown subsets {unknown}",
                         path=path, field="allow_empty_documents")


def _tuple(v) -> tuple:
    return tuple(v) if isinstance(v, list) else v


def load_spec_file(path: str | Path) -> SuiteSpec:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError("suite spec not found", path=str(path)) from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path=str(path)) from exc
    suite = dict(raw.get("suite", {}))
    rerankers = dict(raw.get("rerankers", {}))
    ref = suite.pop("reranker_map", None)
    if ref:
        shared = tomllib.loads((path.parent / ref).read_text(encoding="utf-8"))
        rerankers = {**shared.get("rerankers", {}), **rerankers}
    card = dict(raw.get("card", {}))
    shared_card = suite.pop("card_shared", None)
    if shared_card:
        shared = tomllib.loads((path.parent / shared_card).read_text(encoding="utf-8"))
        card = _merged(shared.get("card", {}), card)
    domains = tuple(DomainSpec(**d) for d in raw.get("domains", []))
    view_languages = tuple(raw.get("views", {}).get("languages", []))
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
        subsets = tuple(SubsetSpec(**s) for s in raw.get("subsets", []))
    pool = PoolSpec(**{k: _tuple(v) for k, v in raw.get("pool", {}).items()})
    corpus = CorpusSpec(**raw.get("corpus", {}))
    for key in ("languages", "task_categories", "modalities"):
        if key in suite:
            suite[key] = tuple(suite[key])
    if suite.get("paper_tie_rule") not in TIE_RULES:
        raise InputError(
            f"paper_tie_rule must be one of {TIE_RULES}", path=str(path), field="paper_tie_rule"
        )
    source = dict(raw.get("source", {}))
    _check_source(source, {s.name for s in subsets} | {d.name for d in domains}, str(path))
    return SuiteSpec(
        subsets=subsets,
        rerankers=rerankers,
        pool=pool,
        corpus=corpus,
        source=source,
        upstream=dict(raw.get("upstream", {})),
        card=card,
        domains=domains,
        view_languages=view_languages,
        path=str(path),
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
        raise UsageError(f"unknown suite {name!r}; known: {', '.join(known_suites())}")
    return _load_spec_cached(path)


@cache
def _load_spec_cached(path: Path) -> SuiteSpec:
    return load_spec_file(path)


def known_suites() -> list[str]:
    return sorted(p.stem for p in builders_dir().glob("*.toml") if not p.stem.startswith("_"))
