"""The kernels that join a release's tables: positions of ids in a vocabulary, dictionary codes,
(query, document) pair keys and the map from pairs to rows, and float columns.

One home for integrity (``checks``) and replay (``scoring``): both read the same tables and
must agree on what a pair is.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rcp_data.core.errors import InputError, shown
from rcp_data.core.io import float_values
from rcp_data.model.orders import is_sorted

#: Largest (queries x documents) key space looked up through a dense table.
DENSE_LIMIT = 1 << 25


def strings(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A string column as one array of ``string`` (other string-like types cast)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not pa.types.is_string(arr.type):
        arr = arr.cast(pa.string())
    return arr


def positions(values: pa.Array, vocab: pa.Array) -> np.ndarray:
    """Position of each of ``values`` in ``vocab`` (-1 when absent or null)."""
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    return pc.index_in(values, value_set=vocab).fill_null(-1).to_numpy(
        zero_copy_only=False).astype(np.int64)


def vocabulary(*arrays: pa.Array) -> pa.Array:
    """The distinct non-null values of the arrays, in order of first appearance."""
    parts = [a for a in arrays if len(a)]
    if not parts:
        return pa.array([], type=pa.string())
    return pc.unique(pa.concat_arrays(parts)).drop_null()


def dictionary_codes(col: pa.ChunkedArray | pa.Array, name: str, path: str
                     ) -> tuple[np.ndarray, pa.Array]:
    """Dictionary codes of a string column, ``(indices, dictionary)``; a null is an
    :class:`InputError` naming ``path``, the row and the column ``name``."""
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise InputError("null value", path=path, row=row, field=name)
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    col = pa.table({"c": col}).unify_dictionaries().column("c")
    if col.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), pa.array([], type=pa.string())
    dictionary = col.chunk(0).dictionary
    indices = np.concatenate(
        [c.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
         for c in col.chunks]
    )
    return indices, dictionary.cast(pa.string())


def _table_span(*arrays: np.ndarray, per_value: int = 8) -> tuple[int, int] | None:
    """``(low, span)`` of the integer values of ``arrays`` when a table indexed by value, of
    ``per_value`` bytes each, is cheap beside the arrays (else None: a sort or a hash then)."""
    lo = min(int(a.min()) for a in arrays)
    span = max(int(a.max()) for a in arrays) - lo + 1
    n = sum(len(a) for a in arrays)
    return (lo, span) if span * per_value <= max(32 * n, 1 << 23) else None


class KeyIds:
    """The integer keys of several arrays numbered ``0..n-1`` in key order, equal keys one id
    (``ids``: one array per part): a key minus the lowest when a table over the keys' range
    is small, else its position among the sorted distinct keys."""

    def __init__(self, *parts: np.ndarray, within: int | None = None):
        """``within``: every key is known to lie in ``0..within-1`` (not scanned for)."""
        some = [p for p in parts if len(p)]
        n_keys = sum(len(p) for p in parts)
        if within is not None and within * 8 <= max(32 * n_keys, 1 << 23):
            span: tuple[int, int] | None = (0, within)
        else:
            span = _table_span(*some) if some else (0, 0)
        self._uniq: np.ndarray | None = None
        if span is not None:
            self.lo, self.n = span
            self.ids = [p - self.lo if self.lo else p for p in parts]
        else:
            self.lo, self._uniq = 0, np.unique(np.concatenate(some))
            self.n = len(self._uniq)
            self.ids = [np.searchsorted(self._uniq, p) for p in parts]

    def key(self, ids: np.ndarray) -> np.ndarray:
        """The key of each id."""
        return ids + self.lo if self._uniq is None else self._uniq[ids]


def rows_of(keys: np.ndarray, probe: np.ndarray) -> np.ndarray:
    """Row of each ``probe`` key in ``keys`` (the first row when repeated; -1 when absent)."""
    if not len(keys):
        return np.full(len(probe), -1, dtype=np.int64)
    if not len(probe):
        return np.zeros(0, dtype=np.int64)
    span = _table_span(keys, probe)
    if span is not None:   # a table over the values: the lowest row of each key
        lo, n_values = span
        first = np.full(n_values, len(keys), dtype=np.int64)
        np.minimum.at(first, keys - lo, np.arange(len(keys), dtype=np.int64))
        row = first[probe - lo]
        return np.where(row < len(keys), row, -1)
    order = np.arange(len(keys)) if is_sorted(keys) else np.argsort(keys, kind="stable")
    sk = keys[order]
    pos = np.clip(np.searchsorted(sk, probe), 0, len(sk) - 1)
    return np.where(sk[pos] == probe, order[pos], -1)


def contains(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether each of ``a`` is in ``b``."""
    if not (len(a) and len(b)):
        return np.zeros(len(a), dtype=bool)
    span = _table_span(a, b, per_value=1)
    if span is None:
        return np.isin(a, b)
    lo, n_values = span
    present = np.zeros(n_values, dtype=bool)
    present[b - lo] = True
    return present[a - lo]


def checked_floats(col: pa.ChunkedArray, name: str, path: str, *,
                   null_as: float | None) -> np.ndarray:
    """A numeric column as float64 whose every value is finite: a null reads as ``null_as``
    (an :class:`InputError` when None), as does a non-numeric column or a NaN or infinite value,
    naming ``path``, the row and the column ``name``."""
    try:
        arr = float_values(col)
        nulls = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"not numeric ({col.type})", path=path, field=name) from exc
    if nulls is not None:
        if null_as is None:
            raise InputError("null value", path=path, row=int(np.flatnonzero(nulls)[0]),
                             field=name)
        arr = np.where(nulls, null_as, arr)
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"non-finite value {shown(arr[row])}", path=path, row=row, field=name)
    return arr


class PairKeys:
    """Keys ``query code * width + document code`` of (query, document) pairs over a query and
    a document vocabulary. Document code ``n_docs`` is the sentinel "no known document"; a key
    of -1 is a pair with an unknown or null query or document."""

    def __init__(self, queries: pa.Array, docs: pa.Array):
        self.queries, self.docs = queries, docs
        self.width = len(docs) + 1

    def of_codes(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        return q.astype(np.int64) * self.width + d

    def __call__(self, q: pa.Array, d: pa.Array) -> np.ndarray:
        """Keys of the pairs of id arrays ``q`` and ``d`` (-1 where either is unknown)."""
        qc, dc = positions(q, self.queries), positions(d, self.docs)
        return np.where((qc >= 0) & (dc >= 0), qc * self.width + dc, -1)

    def doc_codes(self, values: pa.Array) -> np.ndarray:
        """Codes of ``values`` among the documents, unknown ones as the sentinel."""
        codes = positions(values, self.docs)
        codes[codes < 0] = self.width - 1
        return codes

    def split(self, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return key // self.width, key % self.width

    def name(self, key: int) -> tuple[str, str]:
        if key < 0:
            return "<null or unknown id>", "<null or unknown id>"
        q, d = divmod(int(key), self.width)
        return self.queries[q].as_py(), self.docs[d].as_py()


class PairIndex:
    """A map from pair keys (:class:`PairKeys`) to a value, -1 when absent: a dense table when
    the key space is small, else a hash index (the last value of a repeated key wins)."""

    def __init__(self, keys: PairKeys, q: np.ndarray, d: np.ndarray, value: np.ndarray):
        import pandas as pd

        self.keys = keys
        n_keys = max(len(keys.queries), 1) * keys.width
        k = keys.of_codes(q, d)
        if n_keys <= DENSE_LIMIT:
            self.table: np.ndarray | None = np.full(n_keys, -1, dtype=np.int64)
            self.table[k] = value
            self.index = None
        else:
            self.table = None
            uniq, first = np.unique(k[::-1], return_index=True)
            self.index = pd.Index(uniq)
            self.value = np.asarray(value, dtype=np.int64)[::-1][first]

    def get(self, q: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Values of pairs of codes (a document code may be the sentinel)."""
        k = self.keys.of_codes(q, d)
        if self.table is not None:
            return self.table[k]
        pos = self.index.get_indexer(k)
        return np.where(pos >= 0, self.value[np.maximum(pos, 0)], -1)


__all__ = ["DENSE_LIMIT", "KeyIds", "PairIndex", "PairKeys", "checked_floats", "contains",
           "dictionary_codes", "positions", "rows_of", "strings", "vocabulary"]
