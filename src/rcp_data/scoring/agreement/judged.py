"""Which graded documents an agreement figure counts: one rule for every figure shown.

The card's Diagnostics (:mod:`rcp_data.scoring.release_diagnostics`), ``rcp-data agree``
(:mod:`.analysis`), the recalibrate gate (:mod:`rcp_data.release.agreement_gate`, through the
Diagnostics' label layer) and verify's paper numbers (:mod:`rcp_data.checks.paper_agreement`)
all leave rows out by :func:`excluded_mask`, so one release gives one number per statistic.

The rule (:data:`EXCLUSION_RULE`): a document on a query's excluded list (the subset's
``excluded`` table: the suite's exclusions, e.g. BRIGHT's ``excluded_ids``) is left out of that
query's labels, whatever its grade or theta; every other graded row counts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

#: The exclusion rule, as the outputs name it.
EXCLUSION_RULE = "documents on a query's excluded list are left out"


def rule_text(documents: int | None = None) -> str:
    """The rule as an output names it, with the documents counted (``n = ...``) when given."""
    return EXCLUSION_RULE if documents is None else f"{EXCLUSION_RULE}; n = {documents:,}"


def _strings(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values.cast(pa.string())
    return pa.array(np.asarray(values, dtype=object).astype(str), type=pa.string())


def _pairs(excluded: pa.Table | pd.DataFrame) -> tuple[pa.Array, pa.Array]:
    """The ``(query-id, corpus-id)`` pairs an excluded table lists, as two string arrays."""
    if isinstance(excluded, pd.DataFrame):
        lists = [list(v) if v is not None else [] for v in excluded["excluded-corpus-ids"]]
        q = np.repeat(np.asarray(excluded["query-id"], dtype=object).astype(str),
                      [len(v) for v in lists])
        d = [str(x) for v in lists for x in v]
        return pa.array(q, type=pa.string()), pa.array(d, type=pa.string())
    col = excluded.column("excluded-corpus-ids").combine_chunks()
    lengths = pc.list_value_length(col).fill_null(0).to_numpy(zero_copy_only=False)
    queries = _strings(excluded.column("query-id"))
    q = queries.take(pa.array(np.repeat(np.arange(len(queries)), lengths)))
    return q, _strings(pc.list_flatten(col))


def excluded_mask(query_ids, corpus_ids, excluded: pa.Table | pd.DataFrame | None
                  ) -> np.ndarray:
    """Per row ``(query_ids[i], corpus_ids[i])``: whether the rule leaves it out (the document
    is on the query's list in ``excluded``, a subset's ``excluded`` table; None: nothing
    excluded)."""
    q, d = _strings(query_ids), _strings(corpus_ids)
    if excluded is None or not len(excluded) or not len(q):
        return np.zeros(len(q), dtype=bool)
    ex_q, ex_d = _pairs(excluded)
    if not len(ex_q):
        return np.zeros(len(q), dtype=bool)
    queries = pc.unique(pa.concat_arrays([q, ex_q]))
    docs = pc.unique(pa.concat_arrays([d, ex_d]))

    def key(qs: pa.Array, ds: pa.Array) -> np.ndarray:
        qi = pc.index_in(qs, value_set=queries).to_numpy(zero_copy_only=False)
        di = pc.index_in(ds, value_set=docs).to_numpy(zero_copy_only=False)
        return qi.astype(np.int64) * len(docs) + di.astype(np.int64)

    return np.isin(key(q, d), key(ex_q, ex_d))


def read_excluded(root: str | Path, subset: str) -> pa.Table | None:
    """The ``excluded`` table of a subset of the release directory ``root`` (None: it has
    none)."""
    from rcp_data.model.layout import subset_file
    from rcp_data.model.tables import read_release_table

    path = Path(root) / subset_file(subset, "excluded")
    if not path.is_file():
        return None
    return read_release_table(path, "excluded", ["query-id", "excluded-corpus-ids"])


__all__ = ["EXCLUSION_RULE", "excluded_mask", "read_excluded", "rule_text"]
