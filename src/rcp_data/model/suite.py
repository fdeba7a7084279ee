"""Which suite a release belongs to: one function (:func:`which_suite`) every command asks, and
the spec it leads to (:func:`suite_spec`).

A release of a suite outside the package carries the spec it was built with
(:data:`~rcp_data.model.layout.SPEC_COPY`, written by :func:`write_spec_copy`), so that verify,
replay and publish need no ``$RCP_DATA_BUILDERS``; and every release's spec is read with the
first stage its build recorded (``--dense`` may add a retriever: :func:`with_built_first_stage`).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tomllib
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import (
    CorpusSpec,
    PoolSpec,
    SubsetSpec,
    SuiteSpec,
    known_suites,
    load_spec,
    load_spec_file,
    suite_key,
)
from rcp_data.model.card_format import card_front_matter
from rcp_data.model.layout import CARD_FILE, SPEC_COPY
from rcp_data.model.manifest import first_stage_records, read_manifest
from rcp_data.resources import builders_dir as packaged_builders_dir

log = logging.getLogger(__name__)


def _tagged_suite(card_text: str) -> str | None:
    try:
        tags = card_front_matter(card_text).get("tags") or []
    except InputError:
        return None
    for tag in tags if isinstance(tags, list) else []:
        name = suite_key(str(tag))
        if name in known_suites():
            return name
    return None


def _suite_of_columns(columns: Iterable[str]) -> str | None:
    cols = [c for c in set(columns) if c.lower() != "mean"]
    if not cols:
        return None
    hits = []
    for name in known_suites():
        spec = load_spec(name)
        keys = set(spec.subset_names) | {d.name for d in spec.domains}
        if all(spec.column_key(c) in keys for c in cols):
            hits.append(name)
    return hits[0] if len(hits) == 1 else None


def which_suite(root: str | Path | None = None, *, card_text: str | None = None,
                repo: str | None = None, columns: Iterable[str] = ()) -> str | None:
    """The suite a release (or a table of it) belongs to, from the strongest evidence given:

    1. the build manifest's ``suite`` (a release directory ``root``);
    2. the suite tag of its card (``root/README.md``, or ``card_text``);
    3. the suite published at the Hub ``repo`` it came from;
    4. table ``columns`` (subset or domain names or labels) that only one suite has.

    None when nothing names a suite."""
    if root is not None:
        root = Path(root)
        with contextlib.suppress(InputError):   # only its "suite": a malformed manifest
            named = read_manifest(root).get("suite")   # fails the checks that read it whole
            if isinstance(named, str) and named:
                return suite_key(named)
        card = root / CARD_FILE
        if card_text is None and card.exists():
            card_text = card.read_bytes().decode("utf-8", errors="replace")
    if card_text is not None:
        name = _tagged_suite(card_text)
        if name:
            return name
    if repo:
        name = next((n for n in known_suites() if load_spec(n).repo == repo), None)
        if name:
            return name
    return _suite_of_columns(columns)


def is_packaged(spec: SuiteSpec) -> bool:
    """Whether ``spec`` is one of the specs the package carries (its file is in the package's
    ``builders/``)."""
    if not spec.path:
        return True   # built in code (the ad-hoc spec, tests): no file to carry
    return Path(spec.path).resolve().parent == packaged_builders_dir().resolve()


def write_spec_copy(spec: SuiteSpec, root: str | Path) -> list[Path]:
    """Copy the spec file of a suite outside the package into the release (or pools folder)
    ``root`` as :data:`SPEC_COPY`, with the files it names beside it (``reranker_map``,
    ``card_shared``); nothing for a packaged suite. Returns the files written."""
    if is_packaged(spec):
        return []
    src = Path(spec.path)
    dest = Path(root) / SPEC_COPY
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    written = [dest]
    raw = tomllib.loads(src.read_text(encoding="utf-8")).get("suite", {})
    for key in ("reranker_map", "card_shared"):
        name = raw.get(key) if isinstance(raw, dict) else None
        if not name:
            continue
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise InputError(f"a release carries its spec and the files beside it; {name!r} "
                             "is not beside the spec", path=str(src), field=f"suite.{key}")
        (dest.parent / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.parent / name, dest.parent / name)
        written.append(dest.parent / name)
    return written


def carried_spec(root: str | Path) -> SuiteSpec | None:
    """The spec a release (or pools folder) carries (:data:`SPEC_COPY`), None without one."""
    path = Path(root) / SPEC_COPY
    return load_spec_file(path) if path.is_file() else None


def named_spec(name: str, root: str | Path | None = None) -> SuiteSpec:
    """The spec of suite ``name`` for the release ``root``: the spec the release carries when
    it is that suite's (what it was built with), else the one :func:`load_spec` finds (the
    package's, or ``$RCP_DATA_BUILDERS``')."""
    carried = carried_spec(root) if root is not None else None
    if carried is not None and suite_key(carried.name) == suite_key(name):
        return carried
    return load_spec(name)


def with_built_first_stage(spec: SuiteSpec, root: str | Path | None) -> SuiteSpec:
    """``spec`` with the fused retrievers and dense models the build manifest of ``root``
    records (a ``--dense`` retriever the spec does not declare), so that the checks re-fuse
    the runs the release holds; unchanged when the manifest records none."""
    if root is None:
        return spec
    try:
        manifest = read_manifest(root)
    except InputError:
        return spec   # a malformed manifest fails the checks that read it whole
    params = manifest.get("parameters")
    if not isinstance(params, dict):
        return spec
    retrievers = params.get("retrievers")
    try:
        records = first_stage_records(params.get("first_stage"))
    except InputError:
        return spec
    if not isinstance(retrievers, list) or not all(isinstance(r, str) for r in retrievers):
        return spec
    dense = {**spec.pool.dense, **{r.retriever: r.model for r in records
                                   if r.computed and r.method == "dense" and r.model}}
    dense = {k: v for k, v in dense.items() if k in retrievers}
    if tuple(retrievers) == spec.pool.retrievers and dense == spec.pool.dense:
        return spec
    return replace(spec, pool=replace(spec.pool, retrievers=tuple(retrievers), dense=dense))


def adhoc_spec(root: str | Path) -> SuiteSpec:
    """A spec for a release of no known suite: one subset per folder with a top_ranked table."""
    subsets = sorted(p.parent.name for p in Path(root).glob("*/top_ranked.parquet"))
    if not subsets:
        raise InputError("no {subset}/top_ranked.parquet found: not a release directory",
                         path=str(root))
    return SuiteSpec(
        name="unknown", pretty_name=Path(root).name, title=Path(root).name, repo="", split="",
        paper_tie_rule="doc-id",
        subsets=tuple(SubsetSpec(name=s, label=s, task=s) for s in subsets),
        rerankers={}, pool=PoolSpec(), corpus=CorpusSpec(),
    )


def suite_spec(root: str | Path, suite: SuiteSpec | str | None = None, *,
               repo: str | None = None, hint: str = "", adhoc: bool = False
               ) -> tuple[SuiteSpec, bool]:
    """The spec of a release and whether its suite is known: ``suite`` when given, else the
    one :func:`which_suite` finds. With ``adhoc``, a release of no (or an unknown) suite gets
    :func:`adhoc_spec` (``known`` False); otherwise it is an :class:`InputError` whose message
    ends with ``hint`` (which option names the suite)."""
    if isinstance(suite, SuiteSpec):
        return suite, True
    if suite:
        return with_built_first_stage(named_spec(suite, root), root), True
    name = which_suite(root, repo=repo)
    if name:
        try:
            return with_built_first_stage(named_spec(name, root), root), True
        except UsageError:
            if not adhoc:
                raise
            log.warning("release names unknown suite %r; reading its folders as found", name)
    if adhoc:
        return adhoc_spec(root), False
    raise InputError("cannot tell the suite of this release (no build manifest 'suite' and "
                     f"no suite tag in the card){hint}", path=str(root))


def release_spec(root: str | Path, suite: SuiteSpec | str | None = None, *,
                 repo: str | None = None, hint: str = "") -> SuiteSpec:
    """The spec of a release whose suite must be known (see :func:`suite_spec`)."""
    return suite_spec(root, suite, repo=repo, hint=hint)[0]


__all__ = ["adhoc_spec", "carried_spec", "is_packaged", "named_spec", "release_spec",
           "suite_spec", "which_suite", "with_built_first_stage", "write_spec_copy"]
