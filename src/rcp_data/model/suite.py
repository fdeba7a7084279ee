"""Which suite a release belongs to: one function (:func:`which_suite`) every command asks, and
the spec it leads to (:func:`suite_spec`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.specs import (
    CorpusSpec,
    PoolSpec,
    SubsetSpec,
    SuiteSpec,
    known_suites,
    load_spec,
    suite_key,
)
from rcp_data.model.card_format import card_front_matter
from rcp_data.model.layout import CARD_FILE
from rcp_data.model.manifest import read_manifest

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
        return load_spec(suite), True
    name = which_suite(root, repo=repo)
    if name:
        try:
            return load_spec(name), True
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


__all__ = ["adhoc_spec", "release_spec", "suite_spec", "which_suite"]
