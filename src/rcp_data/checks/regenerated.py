"""Generated files are regenerated, not parsed.

For a release this project built, the task file and the card are rendered again from the data
and the release history at the same revision (:func:`rcp_data.documents.card.render_release_texts`)
and must equal the files the revision holds, byte for byte:

- ``rcp_ndcg_tasks.py``: any line the template does not produce (appended code, an edited
  revision, a changed task name) fails, and is shown;
- ``README.md``: nothing is masked. The shas a later regeneration writes into the card (the
  current release's revision and data revision, the older releases' shas in the release table
  and notes) are rendered from ``provenance/releases.json`` at this same revision, and that
  file is tied to the Hub's commits and tags by :mod:`rcp_data.checks.history_checks`
  (``history-entries``, ``older-releases``, ``releases-json-revision``): a card rendered from a
  releases.json those checks accept has exactly the shas the regenerations fill in.

The cards published before the release policy were written by hand; for those the tables are
compared cell by cell instead (:mod:`rcp_data.checks.numbers`).
"""

from __future__ import annotations

import difflib

from rcp_data.checks.reports import MAX_DETAILS, Check
from rcp_data.core.errors import RcpDataError
from rcp_data.model.history import History
from rcp_data.model.layout import CARD_FILE, TASK_FILE
from rcp_data.model.release import Release

CLIP = 120
WHAT = {
    TASK_FILE: ("task-file-regenerated", "the task file is the template's rendering for the "
                "release history at this revision, byte for byte"),
    CARD_FILE: ("card-regenerated", "the card is the rendering of the data and the release "
                "history at this revision, byte for byte (nothing masked: the shas later "
                "regenerations fill in come from releases.json at this revision)"),
}


def _clip(line: str, start: int = 0) -> str:
    part = line[start:start + CLIP]
    return repr(("…" if start else "") + part + ("…" if start + CLIP < len(line) else ""))


def _first_difference(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                min(len(a), len(b)))


def line_differences(expected: str, found: str, limit: int = MAX_DETAILS) -> list[str]:
    """The lines where ``found`` differs from ``expected``, numbered as in ``found``."""
    a, b = expected.splitlines(), found.splitlines()
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        pairs = list(zip(range(i1, i2), range(j1, j2), strict=False)) if tag == "replace" else []
        for i, j in pairs:
            col = _first_difference(a[i], b[j])
            start = max(0, col - CLIP // 3)
            out.append(f"line {j + 1}, column {col + 1}: the template renders "
                       f"{_clip(a[i], start)}, the file has {_clip(b[j], start)}")
        for j in range(j1 + len(pairs), j2):
            out.append(f"line {j + 1}: not produced by the template: {_clip(b[j])}")
        for i in range(i1 + len(pairs), i2):
            out.append(f"after line {j2}: the template renders {_clip(a[i])}, missing here")
        if len(out) >= limit:
            break
    if not out and expected != found:
        out.append("the lines are equal but the bytes differ (line endings or final newline)")
    return out[:limit]


def check_regenerated(rel: Release, history: History, *, results: dict | None = None,
                      built_with: str | None = None) -> list[Check]:
    """Render card and task file again (``results``: the replay, when already computed) and
    compare them with the release's files. ``built_with``: the rcp-data version the build
    manifest records (named when it is not this one: templates may have changed since)."""
    from rcp_data.core.version import __version__
    from rcp_data.documents.card import render_release_texts

    root = rel.root
    try:
        texts = render_release_texts(root, spec=rel.spec, history=history, repo=history.repo,
                                     results=results)
    except RcpDataError as exc:
        return [Check.failed(name, what, "a rendering of this revision", "could not render: "
                             f"{exc.message}", rel) for rel, (name, what) in WHAT.items()]
    checks = []
    for rel, (name, what) in WHAT.items():
        path = root / rel
        if not path.is_file():
            checks.append(Check.failed(name, what, "the file", "missing", rel))
            continue
        data = path.read_bytes()
        want = texts[rel].encode("utf-8")
        if data == want:
            checks.append(Check.passed(name, what, f"{len(data):,} bytes equal", rel))
            continue
        details = line_differences(texts[rel], data.decode("utf-8", errors="replace"))
        if built_with and built_with != __version__:
            details.append(f"the build recorded rcp-data {built_with}, this is {__version__}: "
                           "a template changed since renders other bytes (regenerate the card)")
        checks.append(Check.failed(name, what, f"{len(want):,} bytes as rendered",
                                   f"{len(data):,} bytes, {len(details)} differing lines shown",
                                   rel, details))
    return checks


__all__ = ["check_regenerated", "line_differences"]
