"""Which suite a release belongs to: the one function every command asks."""

from __future__ import annotations

import contextlib
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.specs import SuiteSpec, known_suites, load_spec, suite_key
from rcp_data.model.card_format import card_front_matter
from rcp_data.model.layout import CARD_FILE
from rcp_data.model.manifest import read_manifest


def card_suite(card_text: str) -> str | None:
    """The suite a card's tags name (any spelling of a known suite), else None."""
    try:
        tags = card_front_matter(card_text).get("tags") or []
    except InputError:
        return None
    for tag in tags if isinstance(tags, list) else []:
        name = suite_key(str(tag))
        if name in known_suites():
            return name
    return None


def detect_suite(root: str | Path, *, repo: str | None = None) -> str | None:
    """The suite of a release directory: its build manifest's ``suite``, else the suite its
    card's tags name, else (given the Hub ``repo`` it came from) the suite published there."""
    root = Path(root)
    with contextlib.suppress(InputError):
        suite = read_manifest(root).get("suite")
        if suite:
            return suite_key(str(suite))
    card = root / CARD_FILE
    if card.exists():
        suite = card_suite(card.read_bytes().decode("utf-8", errors="replace"))
        if suite:
            return suite
    if repo:
        return next((n for n in known_suites() if load_spec(n).repo == repo), None)
    return None


def release_spec(root: str | Path, suite: str | None = None, *, repo: str | None = None,
                 hint: str = "") -> SuiteSpec:
    """The spec of ``suite`` when given, else of the suite the release names
    (:func:`detect_suite`); a release that names none is an :class:`InputError` (``hint``
    ends its message, e.g. which option names the suite)."""
    name = suite or detect_suite(root, repo=repo)
    if not name:
        raise InputError("cannot tell the suite of this release (no build manifest 'suite' and "
                         f"no suite tag in the card){hint}", path=str(root))
    return load_spec(name)

