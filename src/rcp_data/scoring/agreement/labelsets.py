"""Label sets beside a release's own qrels: read, checked against the release, aggregated.

A label set is one file per assessor or per label source (TREC qrels, parquet, CSV; read with
:func:`rcp_data.runs.qrels_files.read_qrels`). Every row must name a query of the
release and, for that query, a document of its pool (``top_ranked``) or of its qrels; else
one :class:`InputError` names the file, the row and the field. Aggregation combines the extra
label sets per (query, document) over the assessors who graded it: ``max``, ``min``, ``mean``,
or ``consensus`` (the grade most of them gave; a tie goes to the lower grade), which needs two
assessors or more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rcp_data.core.errors import InputError, UsageError
from rcp_data.runs.qrels_files import read_qrels

AGGREGATES = ("max", "min", "mean", "consensus")
RELEASE_LABELS = "qrels"


@dataclass(frozen=True)
class LabelSet:
    """One label set: ``frame`` has ``query-id, corpus-id, grade`` (and ``row``: its row in
    ``source``, for messages)."""

    name: str
    source: str
    frame: pd.DataFrame


def read_label_set(name: str, source: str | Path | pd.DataFrame) -> LabelSet:
    """A label set from a qrels file (or a frame with ``query-id, corpus-id, grade``)."""
    if isinstance(source, pd.DataFrame):
        frame = source[["query-id", "corpus-id", "grade"]].copy()
        if not pd.api.types.is_numeric_dtype(frame["grade"]):
            bad = pd.to_numeric(frame["grade"], errors="coerce").isna().to_numpy()
            if bad.any():
                raise InputError(f"grade {frame['grade'].iat[int(bad.argmax())]!r} is not a "
                                 "number", path=f"<{name}>", row=int(bad.argmax()) + 1,
                                 field="grade")
        frame["grade"] = frame["grade"].astype(np.float64)
        frame["row"] = np.arange(1, len(frame) + 1)
        return LabelSet(name, f"<{name}>", frame.reset_index(drop=True))
    frame = read_qrels(source, keep_rows=True)
    frame["grade"] = frame["grade"].astype(np.float64)
    return LabelSet(name, str(source), frame)


def check_known(labels: LabelSet, known: pd.DataFrame) -> None:
    """Every row names a known query and, for it, a known document (``known``: the release's
    ``query-id, corpus-id`` pairs of pools and qrels)."""
    frame = labels.frame
    queries = pd.Index(pd.unique(known["query-id"]))
    bad_q = ~frame["query-id"].isin(queries).to_numpy()
    if bad_q.any():
        i = int(bad_q.argmax())
        raise InputError(f"query {frame['query-id'].iat[i]!r} is not a query of the release",
                         path=labels.source, row=int(frame["row"].iat[i]), field="query-id")
    pairs = pd.MultiIndex.from_frame(known[["query-id", "corpus-id"]])
    mine = pd.MultiIndex.from_frame(frame[["query-id", "corpus-id"]])
    bad_d = ~mine.isin(pairs)
    if bad_d.any():
        i = int(bad_d.argmax())
        raise InputError(f"document {frame['corpus-id'].iat[i]!r} is neither in the pool nor "
                         f"in the qrels of query {frame['query-id'].iat[i]!r}",
                         path=labels.source, row=int(frame["row"].iat[i]), field="corpus-id")


def _mode_low(grades: pd.Series) -> float:
    counts = grades.value_counts()
    return float(counts[counts == counts.max()].index.min())


def aggregate(sets: Sequence[LabelSet], how: str) -> LabelSet:
    """One label set combining ``sets`` per (query, document) by ``how`` (see module)."""
    if how not in AGGREGATES:
        raise UsageError(f"unknown aggregate {how!r}; choose one of {', '.join(AGGREGATES)}")
    if not sets:
        raise UsageError("--aggregate needs label sets (--labels NAME=QRELS)")
    if how == "consensus" and len(sets) < 2:
        only = sets[0]
        row = int(only.frame["row"].iat[0]) if len(only.frame) else None
        raise InputError(f"--aggregate consensus needs two assessors or more; label set "
                         f"{only.name!r} is the only one", path=only.source, row=row,
                         field="grade")
    frame = pd.concat([s.frame[["query-id", "corpus-id", "grade"]] for s in sets],
                      ignore_index=True)
    grouped = frame.groupby(["query-id", "corpus-id"], sort=False)["grade"]
    combined = grouped.agg(_mode_low) if how == "consensus" else grouped.agg(how)
    out = combined.reset_index()
    out["row"] = np.arange(1, len(out) + 1)
    return LabelSet(f"{how}({','.join(s.name for s in sets)})", f"<aggregate {how}>", out)


def label_sets(extra: Mapping[str, str | Path | pd.DataFrame] | None) -> list[LabelSet]:
    """Read every extra label set (names must differ from the release's own, ``qrels``)."""
    out = []
    for name, source in (extra or {}).items():
        if name == RELEASE_LABELS:
            raise UsageError(f"label set name {RELEASE_LABELS!r} is the release's own qrels; "
                             "choose another")
        out.append(read_label_set(name, source))
    return out


__all__ = ["AGGREGATES", "RELEASE_LABELS", "LabelSet", "aggregate", "check_known",
           "label_sets", "read_label_set"]
