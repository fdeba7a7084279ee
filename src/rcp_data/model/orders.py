"""Exact orders of large arrays, computed fast: each function returns exactly what its numpy
counterpart returns (the tests compare). A stable order is one sort of packed 64-bit integers
(code, position), which numpy sorts with SIMD several times faster than it argsorts stably;
rows already in order are found in one pass and not sorted. One home for the integrity
checks, the card counts and the agreement statistics.

- :func:`sorting_order`: a permutation that sorts a float array (ties in any order);
- :func:`dense_codes`: ``np.unique(values, return_inverse=True)``'s codes and their count;
- :func:`is_sorted`, :func:`in_order`, :func:`pairs_in_order`: whether rows are in order;
- :func:`stable_order`: ``np.argsort(codes, kind="stable")`` of non-negative integer codes;
- :func:`lex_order`: ``np.lexsort((minor, major))`` of integer codes of known ranges;
- :func:`lexsort_order`: ``np.lexsort(keys[::-1])`` of any integer keys.
"""

from __future__ import annotations

import numpy as np


def sorting_order(values: np.ndarray) -> np.ndarray:
    """A permutation that sorts ``values`` (no NaN); ties in any order (numpy's quicksort,
    about half the time of its stable sort)."""
    return np.argsort(np.asarray(values))


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``(np.unique(values, return_inverse=True)[1], number of distinct values)`` as int64."""
    v = np.asarray(values)
    if v.dtype.kind == "f" and np.isnan(v).any() or v.dtype.kind not in "fiub":
        uniq, inv = np.unique(v, return_inverse=True)
        return inv.reshape(-1).astype(np.int64), len(uniq)
    v = v.reshape(-1)
    if not len(v):
        return np.zeros(0, dtype=np.int64), 0
    order = sorting_order(v)
    s = v[order]
    steps = np.empty(len(v), dtype=np.int64)
    steps[0] = 0
    np.not_equal(s[1:], s[:-1], out=steps[1:], casting="unsafe")
    codes = np.empty(len(v), dtype=np.int64)
    codes[order] = np.cumsum(steps)
    return codes, int(steps.sum()) + 1


def is_sorted(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (checked in one pass)."""
    return bool(len(values) < 2 or (values[1:] >= values[:-1]).all())


def pairs_in_order(compared: np.ndarray, pairs: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    """Whether each compared pair of rows ``(a, b)`` (where ``compared``) has ``a <= b`` on
    the keys ``pairs`` (one ``(a values, b values)`` per key, the first most significant)."""
    undecided = compared.copy()
    for a, b in pairs:
        if (undecided & (b < a)).any():
            return False
        undecided &= b == a
    return True


def in_order(*keys: np.ndarray) -> bool:
    """Whether the rows are sorted by the integer ``keys`` (the first most significant),
    checked in one pass over each."""
    return pairs_in_order(np.ones(max(len(keys[0]) - 1, 0), dtype=bool),
                          [(k[:-1], k[1:]) for k in keys])


def stable_order(codes: np.ndarray, n_codes: int | None = None) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of non-negative integer codes below ``n_codes``:
    one sort of ``code * n + position`` when that fits in 63 bits."""
    c = np.asarray(codes, dtype=np.int64)
    n = len(c)
    if n_codes is None:
        n_codes = int(c.max()) + 1 if n else 0
    if is_sorted(c):                                     # already in order: itself
        return np.arange(n, dtype=np.int64)
    if n_codes * n >= 1 << 62 or c.min() < 0:
        return np.argsort(c, kind="stable")
    packed = np.sort(c * n + np.arange(n, dtype=np.int64))
    return packed % n


def lex_order(minor: np.ndarray, n_minor: int, major: np.ndarray, n_major: int) -> np.ndarray:
    """``np.lexsort((minor, major))`` of integer codes ``0 <= minor < n_minor`` and
    ``0 <= major < n_major``: by major, then minor, then position."""
    minor = np.asarray(minor, dtype=np.int64)
    major = np.asarray(major, dtype=np.int64)
    if n_major * n_minor >= 1 << 62:
        return np.lexsort((minor, major))
    return stable_order(major * n_minor + minor, n_major * n_minor)


def lexsort_order(*keys: np.ndarray) -> np.ndarray:
    """``np.lexsort(keys[::-1])`` (the first key most significant, equal rows in file order)
    of integer keys: the identity when the rows are in that order already; a stable sort by
    the first key alone (a radix sort when it spans at most 2**16 values) when the others are
    in order within each of its values; else one packed sort of one combined key where the
    ranges allow it."""
    keys = tuple(k.astype(np.int64) if k.dtype.kind == "b" else k for k in keys)
    n = len(keys[0])
    if not n:
        return np.zeros(0, dtype=np.int64)
    if not all(k.dtype.kind in "iu" for k in keys):
        return np.lexsort(keys[::-1])
    if in_order(*keys):
        return np.arange(n, dtype=np.int64)
    if any(k.dtype == np.uint64 for k in keys):          # no room to combine them
        return np.lexsort(keys[::-1])
    lows = [int(k.min()) for k in keys]
    spans = [int(k.max()) - lo + 1 for k, lo in zip(keys, lows, strict=True)]
    if spans[0] <= 1 << 16:
        grouped = np.argsort((keys[0] - lows[0]).astype(np.uint16), kind="stable")
        if in_order(*(k[grouped] for k in keys)):
            return grouped
    if np.prod([float(s) for s in spans]) >= 2.0 ** 62:
        return np.lexsort(keys[::-1])
    combined = np.zeros(n, dtype=np.int64)
    for k, lo, span in zip(keys, lows, spans, strict=True):
        combined = combined * span + (k - lo)
    return stable_order(combined, int(np.prod(spans, dtype=np.int64)))


__all__ = ["dense_codes", "in_order", "is_sorted", "lex_order", "lexsort_order",
           "pairs_in_order", "sorting_order", "stable_order"]
